#include "broker/events/event_log.hpp"

#include <algorithm>
#include <deque>
#include <limits>

#include "ojs/core/time.hpp"

namespace ojs::broker {

bool EventFilter::matches(const nlohmann::json& event) const {
  const auto& data = event["data"];
  if (!types.empty() && !types.count(event.value("type", ""))) return false;
  if (!queues.empty() && !queues.count(data.value("queue", ""))) return false;
  if (!job_types.empty() && !job_types.count(data.value("job_type", ""))) return false;
  if (!job_id.empty() && event.value("subject", "") != job_id) return false;
  return true;
}

nlohmann::json to_event(const StreamEntry& entry) {
  nlohmann::json data = nlohmann::json::object();
  std::string type;
  for (const auto& [k, v] : entry.fields) {
    if (k == "type") type = v;
    else if (k == "attempt" || k == "duration_ms") data[k] = std::stoll(v.empty() ? "0" : v);
    else if (k == "next_attempt_at") data[k] = format_rfc3339(std::stoll(v));
    else data[k] = v;
  }
  if (!data.contains("queue")) data["queue"] = entry.queue;  // events not about one job (cron.skipped) still name theirs
  return {{"id", entry.id.text()}, {"type", type}, {"time", format_rfc3339(entry.id.ms)}, {"specversion", "1.0"},
          {"subject", data.value("job_id", "")}, {"data", data}};
}

bool visible_to(const nlohmann::json& event, const std::string& tenant) {
  if (tenant.empty()) return true;
  const auto& data = event["data"];
  const auto it = data.find("tenant");
  return it != data.end() && it->is_string() && it->get_ref<const std::string&>() == tenant;
}

namespace {

// The reader's total order (ms, queue, seq), reversed.
bool newer(const StreamEntry& a, const StreamEntry& b) {
  if (a.id.ms != b.id.ms) return a.id.ms > b.id.ms;
  if (a.queue != b.queue) return a.queue > b.queue;
  return a.id.seq > b.id.seq;
}

constexpr std::size_t kPage = 1000;  // entries per stream per round trip after the first

}  // namespace

EventScan scan_newest(EventStore& store, const std::vector<std::string>& queues, const std::map<std::string, StreamId>& after,
                      std::int64_t until_ms, const std::function<bool(const StreamEntry&)>& keep, std::size_t limit,
                      std::size_t budget) {
  struct Cursor {
    std::string queue, end, start;
    std::deque<StreamEntry> buffer;
    bool done = false;
  };
  const std::string top = until_ms >= 0 ? std::to_string(until_ms) + "-" + std::to_string(std::numeric_limits<std::uint64_t>::max()) : "+";
  std::vector<Cursor> cursors;
  for (const auto& q : queues) {
    const auto from = after.find(q);
    cursors.push_back({q, top, from == after.end() ? "-" : "(" + from->second.text(), {}, false});
  }
  EventScan out;
  std::size_t left = budget;
  // The first round reads every stream at once, its share of the budget each (no
  // more than `limit`); later rounds refill only the streams that ran dry.
  const std::size_t first_page =
      std::clamp<std::size_t>(budget / std::max<std::size_t>(cursors.size(), 1), 1, std::max<std::size_t>(limit, 1));
  bool first = true;
  while (out.entries.size() < limit) {
    std::vector<Cursor*> dry;
    for (auto& c : cursors)
      if (c.buffer.empty() && !c.done) dry.push_back(&c);
    if (!dry.empty()) {  // a dry stream's next entry may be the newest: read before choosing
      if (left == 0) {
        out.complete = false;
        break;
      }
      const std::size_t page = first ? first_page : std::clamp<std::size_t>(left / dry.size(), 1, kPage);
      first = false;
      std::vector<EventStore::RevRange> ranges;
      for (auto* c : dry) ranges.push_back({c->queue, c->end, c->start, std::min(page, left)});
      auto pages = store.revrange(ranges);
      for (std::size_t i = 0; i < dry.size(); ++i) {
        auto& c = *dry[i];
        left -= std::min(left, pages[i].size());
        c.done = pages[i].size() < ranges[i].count;
        if (!pages[i].empty()) c.end = "(" + pages[i].back().id.text();
        for (auto& e : pages[i]) c.buffer.push_back(std::move(e));
      }
      continue;
    }
    Cursor* best = nullptr;
    for (auto& c : cursors)
      if (!c.buffer.empty() && (!best || newer(c.buffer.front(), best->buffer.front()))) best = &c;
    if (!best) break;  // every stream read to its end
    auto entry = std::move(best->buffer.front());
    best->buffer.pop_front();
    if (keep(entry)) out.entries.push_back(std::move(entry));
  }
  return out;
}

EventScan EventLog::newest(const std::vector<std::string>& queues, const EventFilter& filter, const std::string& tenant, int limit,
                           std::vector<nlohmann::json>& out) {
  auto scan = scan_newest(
      events_, queues, {}, -1,
      [&](const StreamEntry& entry) {
        auto event = to_event(entry);
        if (!filter.matches(event) || !visible_to(event, tenant)) return false;
        out.push_back(std::move(event));
        return true;
      },
      static_cast<std::size_t>(std::max(limit, 0)));
  return scan;
}

}  // namespace ojs::broker
