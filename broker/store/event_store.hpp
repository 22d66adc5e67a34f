// Reads the per-queue event streams (ojs:{q}:events) that the transition scripts
// append to. Only reads: the scripts write (emit in _lib.lua). Entries come back
// raw (field/value pairs); broker/events turns them into OJS events.
#pragma once
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

// A stream id "ms-seq" as numbers. Entries of one stream are ordered by it; the
// ms part is Redis time, shared by every stream of one server.
struct StreamId {
  std::int64_t ms = 0;
  std::int64_t seq = 0;
  std::string text() const { return std::to_string(ms) + "-" + std::to_string(seq); }
  friend auto operator<=>(const StreamId&, const StreamId&) = default;
};
std::optional<StreamId> parse_stream_id(const std::string& text);

struct StreamEntry {
  std::string queue;
  StreamId id;
  std::vector<std::pair<std::string, std::string>> fields;
};

class EventStore {
 public:
  explicit EventStore(RedisPool& redis) : redis_(redis) {}

  // One XREVRANGE per range, pipelined: at most `count` entries of the queue's
  // stream from `end` down to `start` (as Redis takes them: "+", "-", "<id>",
  // "(<id>" exclusive), newest first.
  struct RevRange {
    std::string queue, end, start;
    std::size_t count = 0;
  };
  std::vector<std::vector<StreamEntry>> revrange(const std::vector<RevRange>& ranges);

  // One round trip: Redis TIME (ms), then the queue directory. Every entry
  // appended after it has ms >= the time, and every queue that has an entry
  // before it is in the list (the directory is written before a queue's first event).
  std::pair<std::int64_t, std::vector<std::string>> clock_and_queues();

  // For each (queue, after): entries with after < id and id.ms <= end_ms, oldest
  // first, at most `count` per queue. One pipelined XRANGE per queue.
  std::vector<std::vector<StreamEntry>> range(const std::vector<std::pair<std::string, StreamId>>& after, std::int64_t end_ms,
                                              int count);

  // For each (queue, after): whether the stream lost entries after `after` to
  // trimming (XINFO STREAM), i.e. a replay from there has a gap.
  std::vector<bool> trimmed_after(const std::vector<std::pair<std::string, StreamId>>& after);

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
