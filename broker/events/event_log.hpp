// OJS events from the per-queue event streams that the transition scripts append
// to (job.enqueued, job.started, job.completed, job.retrying, job.discarded, ...):
// the event shape, the filters both endpoints share, and the polling read.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
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

// Whether the caller may see events of this job (tenant-pinned tokens); empty: all.
using JobVisibility = std::function<bool(const std::string& job_id)>;

// {id, type, time, specversion, subject, data}: a CloudEvents-shaped OJS event.
nlohmann::json to_event(const StreamEntry& entry);

// The polling read of GET /ojs/v1/events over the queues' event streams.
class EventLog {
 public:
  explicit EventLog(EventStore& events) : events_(events) {}
  // Newest first, at most `limit`, filtered (visibility included) before the limit.
  std::vector<nlohmann::json> newest(const std::vector<std::string>& queues, const EventFilter& filter,
                                     const JobVisibility& visible, int limit);

 private:
  EventStore& events_;
};

}  // namespace ojs::broker
