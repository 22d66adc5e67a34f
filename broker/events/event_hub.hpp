// The SSE fan-out: one reader thread per broker polls the per-queue event streams
// (one pipelined round trip per poll, only while a client is connected) and hands
// each event to the subscriptions whose filters match. A hundred SSE clients cost
// one reader, not a hundred blocking Redis connections.
//
// Order and resume. Each poll reads Redis TIME first and then only entries up to
// that millisecond (minus one): every entry at or below it has been written, so
// events go out in one total order (ms, queue, seq) and never behind one already
// sent. An SSE id names that position ("<ms>-<seq>@<queue>"); a client that comes
// back with Last-Event-ID is replayed exactly what follows it, up to where the
// live stream takes over (system.gap when trimming lost some of it). A replay
// reads at most kEventScanBudget entries (event_log.hpp), newest first, and keeps
// the newest buffer_events; what it leaves out is a system.gap too.
#pragma once
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "broker/events/event_subscription.hpp"
#include "broker/events/stream_slots.hpp"
#include "broker/store/event_store.hpp"

namespace ojs::broker {

struct EventHubOptions {
  std::size_t max_streams = 256;               // open SSE streams per broker; beyond: 503
  std::shared_ptr<StreamSlots> slots;          // the broker's stream count, shared with log follows (null: max_streams of its own)
  std::chrono::milliseconds poll{100};         // reader cadence while streams are open
  std::chrono::milliseconds keep_alive{15000};  // ":heartbeat" after this long without a frame
  std::size_t buffer_events = 1000;            // frames one slow client may have waiting
};

class EventHub {
 public:
  EventHub(EventStore& store, EventHubOptions options);
  ~EventHub();
  void start();
  // Every open stream gets server.shutdown and ends; new subscriptions are refused.
  void stop();

  // A stream of the events matching `filter` (and `tenant` when not empty), from
  // now, or from after `last_event_id` when it names a position. Throws OjsError
  // unavailable when max_streams are open or the hub is stopping.
  // until_terminal: the stream ends after a terminal event (job.completed,
  // job.cancelled, job.discarded): the per-job stream.
  std::shared_ptr<EventSubscription> subscribe(EventFilter filter, std::string tenant, const std::string& last_event_id,
                                               bool until_terminal = false);
  std::size_t open_streams();

  // A listener of every event beside the SSE streams (webhook delivery): the reader
  // polls while `wanted()` says so, even with no stream open, and hands the sink
  // each event in the reader's order with its key (unique over every queue). The
  // sink runs on the reader thread: it must not block. Set before start().
  using Sink = std::function<void(const std::string& key, const nlohmann::json& event)>;
  void set_sink(std::function<bool()> wanted, Sink sink);

 private:
  struct Position {  // where an SSE id points: the total order of the reader
    StreamId id;
    std::string queue;
  };
  static std::optional<Position> parse_position(const std::string& sse_id);
  static std::string sse_id(const StreamEntry& entry);

  void run();
  void start_reading();  // under read_mutex_: cursors at Redis's now
  std::map<std::string, StreamId> last_ids(const EventFilter& filter);  // under read_mutex_: where a new stream starts
  void poll_once();      // under read_mutex_
  void deliver(const std::vector<StreamEntry>& entries);
  void replay(EventSubscription& sub, const Position& from, std::int64_t until_ms, const std::vector<std::string>& queues);
  // The subscription's filters and tenant; the tenant is in the entry (no job read).
  static bool visible(const EventSubscription& sub, const nlohmann::json& event);
  std::vector<std::shared_ptr<EventSubscription>> live_subscriptions();  // prunes the abandoned

  EventStore& store_;
  const EventHubOptions options_;

  std::mutex read_mutex_;  // the reader's position: polls and new subscriptions take turns
  bool reading_ = false;
  std::int64_t watermark_ms_ = 0;              // every entry with ms <= this has been delivered
  std::map<std::string, StreamId> cursors_;    // queue -> last entry read

  std::mutex subs_mutex_;
  std::condition_variable wake_;
  // Weak: a subscription lives as long as the response that carries it.
  std::vector<std::weak_ptr<EventSubscription>> subs_;
  std::shared_ptr<StreamSlots> slots_;
  void prune_locked();  // under subs_mutex_: forgets the gone and the abandoned
  bool stopping_ = false;
  std::function<bool()> sink_wanted_;
  Sink sink_;
  bool listening_locked() const { return !subs_.empty() || (sink_wanted_ && sink_wanted_()); }  // under subs_mutex_
  std::thread reader_;
};

}  // namespace ojs::broker
