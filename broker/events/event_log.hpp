// OJS events from the per-queue event streams that the transition scripts append
// to (job.enqueued, job.started, job.completed, job.retrying, job.discarded, ...):
// the event shape, the filters both endpoints share, and the polling read.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "broker/store/event_store.hpp"

namespace ojs::broker {

// The query filters of GET /ojs/v1/events and /events/stream. Empty means all.
struct EventFilter {
  std::set<std::string> types;      // event types: job.completed, ...
  std::set<std::string> queues;
  std::set<std::string> job_types;  // the job's type ("email.send")
  std::string job_id;
  bool matches(const nlohmann::json& event) const;
};

// {id, type, time, specversion, subject, data}: a CloudEvents-shaped OJS event.
// data.tenant is the job's tenant when it has one (written into the entry by
// emit in _lib.lua, so that a tenant-pinned reader never reads the job).
nlohmann::json to_event(const StreamEntry& entry);

// Whether a caller pinned to `tenant` ("" = not pinned: all) may see the event.
bool visible_to(const nlohmann::json& event, const std::string& tenant);

// What one request may read of the event streams (GET /ojs/v1/events, an SSE
// replay from Last-Event-ID): at most this many entries over all queues, however
// many queues and whatever the filters (docs/operations.md "Events").
inline constexpr std::size_t kEventScanBudget = 10000;

// The newest entries of the queues' streams that `keep` accepts, newest first
// (time, then queue, then sequence, all descending), at most `limit`, reading at
// most `budget` entries. `after`: per queue, only entries after that id; until_ms
// (>= 0): only entries of that millisecond or before. Streams are read in pages,
// one pipelined round trip for every stream whose page ran out, so a request
// costs O(budget) entries and a few round trips, never a whole stream.
struct EventScan {
  std::vector<StreamEntry> entries;
  bool complete = true;  // false: the budget ran out before `limit` entries or the streams' ends were reached
};
EventScan scan_newest(EventStore& store, const std::vector<std::string>& queues, const std::map<std::string, StreamId>& after,
                      std::int64_t until_ms, const std::function<bool(const StreamEntry&)>& keep, std::size_t limit,
                      std::size_t budget = kEventScanBudget);

// The polling read of GET /ojs/v1/events over the queues' event streams.
class EventLog {
 public:
  explicit EventLog(EventStore& events) : events_(events) {}
  // Newest first, at most `limit`, filtered (the tenant of a pinned caller
  // included) before the limit; `complete` false when the scan budget ran out.
  EventScan newest(const std::vector<std::string>& queues, const EventFilter& filter, const std::string& tenant, int limit,
                   std::vector<nlohmann::json>& out);

 private:
  EventStore& events_;
};

}  // namespace ojs::broker
