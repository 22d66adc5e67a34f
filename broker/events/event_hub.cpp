#include "broker/events/event_hub.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "broker/events/event_log.hpp"
#include "broker/store/store_error.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {

constexpr int kReadBatch = 1000;  // entries per queue per round trip
constexpr std::int64_t kSeqMax = std::numeric_limits<std::int64_t>::max();

// Total order of the reader: time, then queue, then the stream's own sequence.
bool is_terminal_event(const std::string& type) {
  return type == "job.completed" || type == "job.cancelled" || type == "job.discarded";
}

bool before(const StreamEntry& a, const StreamEntry& b) {
  if (a.id.ms != b.id.ms) return a.id.ms < b.id.ms;
  if (a.queue != b.queue) return a.queue < b.queue;
  return a.id.seq < b.id.seq;
}

}  // namespace

EventHub::EventHub(EventStore& store, EventHubOptions options)
    : store_(store), options_(options), slots_(options_.slots ? options_.slots : std::make_shared<StreamSlots>(options_.max_streams)) {}

EventHub::~EventHub() { stop(); }

void EventHub::start() {
  if (!reader_.joinable()) reader_ = std::thread([this] { run(); });
}

void EventHub::stop() {
  std::vector<std::shared_ptr<EventSubscription>> subs;
  {
    std::lock_guard lock(subs_mutex_);
    if (stopping_ && !reader_.joinable()) return;
    stopping_ = true;
    for (auto& weak : subs_)
      if (auto sub = weak.lock()) subs.push_back(std::move(sub));
    subs_.clear();
  }
  wake_.notify_all();
  if (reader_.joinable()) reader_.join();
  // spec/ojs-realtime.md 4.6 and 5.1: tell the clients, then end their streams.
  const nlohmann::json goodbye = {{"reason", "shutdown"}, {"grace_period_ms", 2000}};
  for (auto& sub : subs) sub->finish(sse_frame("", "server.shutdown", goodbye.dump()));
}

void EventHub::set_sink(std::function<bool()> wanted, Sink sink) {
  std::lock_guard lock(subs_mutex_);
  sink_wanted_ = std::move(wanted);
  sink_ = std::move(sink);
}

std::size_t EventHub::open_streams() { return live_subscriptions().size(); }

void EventHub::prune_locked() {
  std::erase_if(subs_, [](const auto& weak) {
    auto sub = weak.lock();
    return !sub || sub->abandoned();
  });
}

std::vector<std::shared_ptr<EventSubscription>> EventHub::live_subscriptions() {
  std::vector<std::shared_ptr<EventSubscription>> out;
  std::lock_guard lock(subs_mutex_);
  prune_locked();
  for (auto& weak : subs_)
    if (auto sub = weak.lock()) out.push_back(std::move(sub));
  return out;
}

std::optional<EventHub::Position> EventHub::parse_position(const std::string& sse_id) {
  const auto at = sse_id.find('@');
  if (at == std::string::npos || at + 1 >= sse_id.size()) return std::nullopt;
  auto id = parse_stream_id(sse_id.substr(0, at));
  if (!id) return std::nullopt;
  return Position{*id, sse_id.substr(at + 1)};
}

std::string EventHub::sse_id(const StreamEntry& entry) { return entry.id.text() + "@" + entry.queue; }

std::shared_ptr<EventSubscription> EventHub::subscribe(EventFilter filter, std::string tenant, const std::string& last_event_id,
                                                       bool until_terminal) {
  auto sub = std::make_shared<EventSubscription>(std::move(filter), std::move(tenant), options_.buffer_events, until_terminal);
  {
    std::lock_guard lock(subs_mutex_);
    prune_locked();
    if (stopping_) throw OjsError(ErrorCode::unavailable, "the broker is shutting down");
    auto slot = slots_->take();
    if (!slot)
      throw OjsError(ErrorCode::unavailable,
                     "too many open event streams and log follows: this broker serves at most " +
                         std::to_string(slots_->limit()) + " (--max-event-streams); retry later or poll GET /ojs/v1/events",
                     {{"retry_after_s", 5}, {"limit", slots_->limit()}, {"reason", "too_many_streams"}});
    sub->hold_slot(std::move(slot));
  }
  // An id we never issued: resume from now (spec/ojs-realtime.md 2.5), no error.
  const auto from = last_event_id.empty() ? std::nullopt : parse_position(last_event_id);
  std::int64_t until_ms = 0;
  std::vector<std::string> queues;
  {
    std::lock_guard lock(read_mutex_);
    if (!reading_) start_reading();
    until_ms = watermark_ms_;
    for (const auto& [q, _] : cursors_) queues.push_back(q);
    if (!from) sub->start_after(last_ids(sub->filter()));  // under the read position: no poll in between
    std::lock_guard subs_lock(subs_mutex_);  // joins under the read position: live events start after until_ms
    subs_.push_back(sub);
  }
  wake_.notify_all();
  if (from) {
    try {
      replay(*sub, *from, until_ms, queues);
    } catch (...) {
      sub->abandon();  // no response will carry it: free its place
      throw;
    }
  }
  return sub;
}

// A stream from now starts at what the streams hold now, not at the reader's
// position: that lags by up to a poll, and ends a millisecond before Redis's TIME,
// so entries written before the subscription (the PUSH the client made before it
// opened the stream) would still come. Every entry written before this read is at
// or before these ids; a queue created later has only later entries.
std::map<std::string, StreamId> EventHub::last_ids(const EventFilter& filter) {
  std::vector<std::string> queues(filter.queues.begin(), filter.queues.end());
  if (queues.empty()) queues = store_.clock_and_queues().second;
  std::map<std::string, StreamId> out;
  std::vector<EventStore::RevRange> newest;
  for (const auto& queue : queues) newest.push_back({queue, "+", "-", 1});
  for (const auto& entries : store_.revrange(newest))
    for (const auto& entry : entries) out[entry.queue] = entry.id;
  return out;
}

void EventHub::start_reading() {
  auto [now, queues] = store_.clock_and_queues();
  watermark_ms_ = now - 1;
  cursors_.clear();
  for (const auto& q : queues) cursors_[q] = StreamId{watermark_ms_, kSeqMax};
  reading_ = true;
}

void EventHub::run() {
  auto last_warning = std::chrono::steady_clock::time_point{};
  for (;;) {
    {
      std::unique_lock lock(subs_mutex_);
      wake_.wait_for(lock, options_.poll, [this] { return stopping_; });
      if (stopping_) return;
      prune_locked();
      if (!listening_locked()) {
        lock.unlock();
        std::lock_guard read_lock(read_mutex_);  // a subscriber joins under it: check again
        std::lock_guard subs_lock(subs_mutex_);
        if (!listening_locked()) reading_ = false;  // nobody listens: stop polling; the next subscriber starts from its now
        continue;
      }
    }
    try {
      std::lock_guard lock(read_mutex_);
      if (!reading_) start_reading();
      else poll_once();
    } catch (const StoreUnavailable& e) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_warning > std::chrono::seconds(10)) {
        spdlog::warn("event stream reader: {}", e.what());
        last_warning = now;
      }
    } catch (const std::exception& e) {
      spdlog::error("event stream reader: {}", e.what());
    }
    const auto now = EventSubscription::Clock::now();
    for (auto& sub : live_subscriptions()) sub->keep_alive(now, options_.keep_alive);
  }
}

void EventHub::poll_once() {
  auto [now, queues] = store_.clock_and_queues();
  std::int64_t limit = now - 1;
  if (limit <= watermark_ms_) return;
  // A queue that appeared since the last poll has only entries after it: read it whole.
  std::map<std::string, StreamId> cursors;
  for (const auto& q : queues) {
    auto it = cursors_.find(q);
    cursors[q] = it == cursors_.end() ? StreamId{0, 0} : it->second;
  }
  cursors_ = std::move(cursors);
  std::vector<std::pair<std::string, StreamId>> after(cursors_.begin(), cursors_.end());
  auto batches = store_.range(after, limit, kReadBatch);
  // A queue cut short by the batch size bounds this poll: later entries of the
  // others wait for the next, so the order holds.
  for (const auto& batch : batches)
    if (static_cast<int>(batch.size()) == kReadBatch) limit = std::min(limit, batch.back().id.ms - 1);
  if (limit <= watermark_ms_) {  // one millisecond holds more than a batch: deliver it whole, order within it aside
    limit = watermark_ms_ + 1;
    for (const auto& batch : batches)
      if (static_cast<int>(batch.size()) == kReadBatch) limit = std::max(limit, batch.back().id.ms);
  }
  std::vector<StreamEntry> entries;
  for (auto& batch : batches)
    for (auto& e : batch) {
      if (e.id.ms > limit) break;
      cursors_[e.queue] = e.id;
      entries.push_back(std::move(e));
    }
  watermark_ms_ = limit;
  std::sort(entries.begin(), entries.end(), before);
  deliver(entries);
}

bool EventHub::visible(const EventSubscription& sub, const nlohmann::json& event) {
  return sub.filter().matches(event) && visible_to(event, sub.tenant());
}

void EventHub::deliver(const std::vector<StreamEntry>& entries) {
  if (entries.empty()) return;
  const auto subs = live_subscriptions();
  const bool to_sink = sink_ && sink_wanted_ && sink_wanted_();  // set before start(): read without the lock
  for (const auto& entry : entries) {
    const auto event = to_event(entry);
    const auto id = sse_id(entry);
    if (to_sink) sink_(id, event);
    std::string frame;  // rendered once, for the first subscriber that wants it
    for (const auto& sub : subs) {
      if (!sub->is_new(entry) || !visible(*sub, event)) continue;
      if (frame.empty())
        frame = sse_frame(id, event.value("type", ""), event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      sub->offer(id, frame, sub->until_terminal() && is_terminal_event(event.value("type", "")));
    }
  }
}

void EventHub::replay(EventSubscription& sub, const Position& from, std::int64_t until_ms, const std::vector<std::string>& queues) {
  if (from.id.ms > until_ms) return;
  // What follows `from` in the reader's order, queue by queue.
  std::vector<std::pair<std::string, StreamId>> after;
  for (const auto& q : queues) {
    if (q < from.queue) after.emplace_back(q, StreamId{from.id.ms, kSeqMax});
    else if (q == from.queue) after.emplace_back(q, from.id);
    else after.emplace_back(q, from.id.ms > 0 ? StreamId{from.id.ms - 1, kSeqMax} : StreamId{0, 0});
  }
  const auto trimmed = store_.trimmed_after(after);
  // Bounded (kEventScanBudget entries), newest first: the newest buffer_events
  // visible ones, as live backpressure keeps the newest. One more is asked for to
  // tell whether any were left out.
  std::vector<std::pair<StreamEntry, nlohmann::json>> kept;
  auto scan = scan_newest(
      store_, queues, std::map<std::string, StreamId>(after.begin(), after.end()), until_ms,
      [&](const StreamEntry& entry) {
        auto event = to_event(entry);
        if (!visible(sub, event)) return false;
        kept.emplace_back(entry, std::move(event));
        return true;
      },
      options_.buffer_events + 1);
  const bool left_out = !scan.complete || kept.size() > options_.buffer_events;
  if (kept.size() > options_.buffer_events) kept.pop_back();  // the oldest: only a sign that more exist
  std::reverse(kept.begin(), kept.end());                      // the reader's order
  std::string frames;
  if (left_out || std::find(trimmed.begin(), trimmed.end(), true) != trimmed.end()) {
    // spec/ojs-realtime.md 4.5: events after Last-Event-ID are not replayed (trimmed
    // from the streams, or beyond what one replay reads): the client resyncs.
    const nlohmann::json gap = {{"channel", "events"}, {"gap_start", format_rfc3339(from.id.ms)},
                                {"gap_end", format_rfc3339(kept.empty() ? until_ms : kept.front().first.id.ms)}};
    frames += sse_frame("", "system.gap", gap.dump());
  }
  bool ended = false;
  for (const auto& [entry, event] : kept) {
    frames += sse_frame(sse_id(entry), event.value("type", ""), event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if ((ended = sub.until_terminal() && is_terminal_event(event.value("type", "")))) break;
  }
  sub.offer_front(std::move(frames));
  if (ended) sub.finish("");  // the job's stream is over
}

}  // namespace ojs::broker
