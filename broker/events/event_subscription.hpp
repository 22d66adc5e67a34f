// One SSE client of the event hub: its filters, the frames waiting for the
// connection, and the pull the connection left (see BodySource). The hub offers
// frames from its reader thread; the connection pulls from its I/O strand.
// Backpressure (spec/ojs-realtime.md 5.4): at most `buffer_events` frames wait;
// beyond, the oldest are dropped and the client is told (system.events_dropped).
#pragma once
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "broker/events/event_log.hpp"
#include "broker/http/message.hpp"

namespace ojs::broker {

class EventSubscription : public BodySource {
 public:
  using Clock = std::chrono::steady_clock;
  // until_terminal: the stream of one job, ended after its terminal event.
  EventSubscription(EventFilter filter, std::string tenant, std::size_t buffer_events, bool until_terminal = false);

  void pull(Deliver deliver) override;
  void abandon() override;

  const EventFilter& filter() const { return filter_; }
  const std::string& tenant() const { return tenant_; }  // "" = all tenants
  bool until_terminal() const { return until_terminal_; }
  bool abandoned() const;
  // The stream's slot among the broker's open streams (StreamSlots): given back when
  // the client goes (abandon) or the subscription ends.
  void hold_slot(std::shared_ptr<void> slot);
  // Bytes of the frames waiting for the connection: a feeder that can wait (a log
  // follow reads the log again later) stops adding while they are many.
  std::size_t queued_bytes() const;

  // Where a stream opened "from now" starts: per queue, the last id its stream had
  // when the subscription was established (set by the hub before it joins; a queue
  // not named has no entry before that). A resumed stream has none: all is new.
  void start_after(std::map<std::string, StreamId> last_ids) { start_ = std::move(last_ids); }
  bool is_new(const StreamEntry& entry) const {
    auto it = start_.find(entry.queue);
    return it == start_.end() || it->second < entry.id;
  }

  // Hub side.
  void offer(const std::string& event_id, std::string frame, bool last = false);  // one event, in order; last: then the end
  void offer_front(std::string frames);                        // replayed events, before what waits
  void keep_alive(Clock::time_point now, Clock::duration idle);  // a comment when the client heard nothing for `idle`
  void finish(std::string last_frame);                          // the last words, then the end of the response

 private:
  Deliver take_ready();  // under mutex_: the waiting pull, if there is something to answer it with
  std::string drain();   // under mutex_: everything pending as one chunk

  const EventFilter filter_;
  const std::string tenant_;
  const std::size_t buffer_events_;
  const bool until_terminal_;
  std::map<std::string, StreamId> start_;  // written before the hub shares the subscription
  mutable std::mutex mutex_;
  std::string head_;  // preface and replay, sent before the queued events
  std::deque<std::pair<std::string, std::string>> queued_;  // event id, frame
  std::size_t dropped_ = 0;
  std::string oldest_dropped_, newest_dropped_;
  Deliver waiting_;
  std::size_t queued_bytes_ = 0;
  std::shared_ptr<void> slot_;
  Clock::time_point last_sent_ = Clock::now();
  bool ending_ = false, ended_ = false, abandoned_ = false;
};

// SSE frames (W3C server-sent events).
std::string sse_frame(const std::string& id, const std::string& event, const std::string& data_json);

}  // namespace ojs::broker
