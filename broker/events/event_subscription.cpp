#include "broker/events/event_subscription.hpp"

#include "ojs/core/time.hpp"

namespace ojs::broker {

std::string sse_frame(const std::string& id, const std::string& event, const std::string& data_json) {
  std::string out;
  if (!id.empty()) out += "id: " + id + "\n";
  out += "event: " + event + "\ndata: " + data_json + "\n\n";
  return out;
}

EventSubscription::EventSubscription(EventFilter filter, std::string tenant, std::size_t buffer_events, bool until_terminal)
    : filter_(std::move(filter)),
      tenant_(std::move(tenant)),
      buffer_events_(std::max<std::size_t>(1, buffer_events)),
      until_terminal_(until_terminal) {
  head_ = "retry: 3000\n\n";  // reconnection advice (spec/ojs-realtime.md 2.3)
}

bool EventSubscription::abandoned() const {
  std::lock_guard lock(mutex_);
  return abandoned_ || ended_;
}

void EventSubscription::hold_slot(std::shared_ptr<void> slot) {
  std::lock_guard lock(mutex_);
  slot_ = std::move(slot);
}

std::size_t EventSubscription::queued_bytes() const {
  std::lock_guard lock(mutex_);
  return queued_bytes_;
}

std::string EventSubscription::drain() {
  std::string out = std::move(head_);
  head_.clear();
  if (dropped_ > 0) {
    const nlohmann::json note = {{"channel", "events"}, {"dropped_count", dropped_}, {"oldest_dropped_id", oldest_dropped_},
                                 {"newest_dropped_id", newest_dropped_}, {"timestamp", format_rfc3339(now_ms())}};
    out += ":events-dropped " + std::to_string(dropped_) + "\n\n" + sse_frame("", "system.events_dropped", note.dump());
    dropped_ = 0;
  }
  for (auto& [_, frame] : queued_) out += frame;
  queued_.clear();
  queued_bytes_ = 0;
  return out;
}

BodySource::Deliver EventSubscription::take_ready() {
  if (!waiting_ || abandoned_) return nullptr;
  if (head_.empty() && queued_.empty() && dropped_ == 0 && !ending_) return nullptr;
  Deliver out = std::move(waiting_);
  waiting_ = nullptr;
  return out;
}

void EventSubscription::pull(Deliver deliver) {
  std::optional<std::string> chunk;
  {
    std::lock_guard lock(mutex_);
    if (abandoned_) return;
    if (head_.empty() && queued_.empty() && dropped_ == 0 && !ending_) {
      waiting_ = std::move(deliver);  // answered later, by offer / keep_alive / finish
      return;
    }
    auto text = drain();
    if (!text.empty()) chunk = std::move(text);
    else {
      ended_ = true;  // ending and all said: the end of the response
      slot_.reset();
    }
    last_sent_ = Clock::now();
  }
  deliver(std::move(chunk));
}

void EventSubscription::abandon() {
  Deliver dropped;
  std::lock_guard lock(mutex_);
  abandoned_ = true;
  dropped = std::move(waiting_);  // it holds the connection: released here, never called
  queued_.clear();
  queued_bytes_ = 0;
  slot_.reset();
}

void EventSubscription::offer(const std::string& event_id, std::string frame, bool last) {
  Deliver deliver;
  std::string chunk;
  {
    std::lock_guard lock(mutex_);
    if (abandoned_ || ending_) return;
    queued_bytes_ += frame.size();
    queued_.emplace_back(event_id, std::move(frame));
    if (queued_.size() > buffer_events_) {
      if (dropped_ == 0) oldest_dropped_ = queued_.front().first;
      newest_dropped_ = queued_.front().first;
      ++dropped_;
      queued_bytes_ -= queued_.front().second.size();
      queued_.pop_front();
    }
    if (last) ending_ = true;
    if (!(deliver = take_ready())) return;
    chunk = drain();
    last_sent_ = Clock::now();
  }
  deliver(std::move(chunk));
}

void EventSubscription::offer_front(std::string frames) {
  std::lock_guard lock(mutex_);
  head_ += frames;  // the connection has not pulled yet: the handler replays before it answers
}

void EventSubscription::keep_alive(Clock::time_point now, Clock::duration idle) {
  Deliver deliver;
  {
    std::lock_guard lock(mutex_);
    if (!waiting_ || abandoned_ || ending_ || now - last_sent_ < idle) return;
    deliver = std::move(waiting_);
    waiting_ = nullptr;
    last_sent_ = now;
  }
  deliver(std::string(":heartbeat\n\n"));
}

void EventSubscription::finish(std::string last_frame) {
  Deliver deliver;
  std::optional<std::string> chunk;
  {
    std::lock_guard lock(mutex_);
    if (abandoned_ || ending_) return;
    queued_bytes_ += last_frame.size();
    queued_.emplace_back("", std::move(last_frame));
    ending_ = true;
    if (!(deliver = take_ready())) return;
    chunk = drain();
  }
  deliver(std::move(chunk));
}

}  // namespace ojs::broker
