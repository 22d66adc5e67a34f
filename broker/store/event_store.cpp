#include "broker/store/event_store.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include "broker/store/keys.hpp"
#include "broker/store/reply_integer.hpp"

namespace ojs::broker {

namespace {

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

StreamEntry to_entry(const std::string& queue, const RedisValue& entry) {
  StreamEntry out;
  out.queue = queue;
  out.id = parse_stream_id(entry.elements[0].str).value_or(StreamId{});
  const auto& f = entry.elements[1].elements;
  for (std::size_t i = 0; i + 1 < f.size(); i += 2) out.fields.emplace_back(f[i].str, f[i + 1].str);
  return out;
}

std::vector<StreamEntry> entries_of(const std::string& queue, const RedisValue& reply) {
  std::vector<StreamEntry> out;
  for (const auto& e : reply.elements)
    if (e.elements.size() == 2) out.push_back(to_entry(queue, e));
  return out;
}

}  // namespace

std::optional<StreamId> parse_stream_id(const std::string& text) {
  const auto dash = text.find('-');
  if (dash == std::string::npos) return std::nullopt;
  auto ms = to_int(std::string_view(text).substr(0, dash));
  auto seq = to_int(std::string_view(text).substr(dash + 1));
  if (!ms || !seq || *ms < 0 || *seq < 0) return std::nullopt;
  return StreamId{*ms, *seq};
}

std::vector<std::vector<StreamEntry>> EventStore::revrange(const std::vector<RevRange>& ranges) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& r : ranges) cmds.push_back({"XREVRANGE", keys::events(r.queue), r.end, r.start, "COUNT", std::to_string(r.count)});
  std::vector<std::vector<StreamEntry>> out;
  if (cmds.empty()) return out;
  const auto replies = redis_.pipeline(cmds);
  for (std::size_t i = 0; i < replies.size(); ++i) out.push_back(entries_of(ranges[i].queue, replies[i]));
  return out;
}

std::pair<std::int64_t, std::vector<std::string>> EventStore::clock_and_queues() {
  const auto replies = redis_.pipeline({{"TIME"}, {"HKEYS", keys::queue_directory}});
  const auto clock = time_reply_ms(replies[0]);
  if (!clock) throw StoreUnavailable("TIME: unexpected reply");
  const std::int64_t ms = *clock;
  std::vector<std::string> queues;
  for (const auto& e : replies[1].elements) queues.push_back(e.str);
  std::sort(queues.begin(), queues.end());
  return {ms, std::move(queues)};
}

std::vector<std::vector<StreamEntry>> EventStore::range(const std::vector<std::pair<std::string, StreamId>>& after,
                                                         std::int64_t end_ms, int count) {
  std::vector<std::vector<std::string>> cmds;
  const std::string end = std::to_string(end_ms) + "-" + std::to_string(std::numeric_limits<std::uint64_t>::max());
  for (const auto& [q, from] : after) {
    std::string exclusive = "(";  // appended, not "(" + text (GCC 12's false -Wrestrict)
    exclusive += from.text();
    cmds.push_back({"XRANGE", keys::events(q), std::move(exclusive), end, "COUNT", std::to_string(count)});
  }
  std::vector<std::vector<StreamEntry>> out;
  if (cmds.empty()) return out;
  const auto replies = redis_.pipeline(cmds);
  for (std::size_t i = 0; i < replies.size(); ++i) out.push_back(entries_of(after[i].first, replies[i]));
  return out;
}

std::vector<bool> EventStore::trimmed_after(const std::vector<std::pair<std::string, StreamId>>& after) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [q, _] : after) cmds.push_back({"XINFO", "STREAM", keys::events(q)});
  std::vector<bool> out(after.size(), false);
  if (cmds.empty()) return out;
  const auto replies = redis_.pipeline(cmds);
  for (std::size_t i = 0; i < replies.size(); ++i) {
    // Trimming removes the oldest entries and leaves max-deleted-entry-id alone,
    // so: some entry was removed (entries-added > length) and the oldest one left
    // comes after `after`. (When it is the very next one this says gap where
    // there is none: the client resyncs for nothing, never misses a loss.)
    const auto& f = replies[i].elements;  // flat field/value list; an error reply (no stream) has none
    long long added = 0, length = 0;
    std::optional<StreamId> first;
    for (std::size_t k = 0; k + 1 < f.size(); k += 2) {
      if (f[k].str == "entries-added") added = f[k + 1].integer;
      else if (f[k].str == "length") length = f[k + 1].integer;
      else if (f[k].str == "recorded-first-entry-id") first = parse_stream_id(f[k + 1].str);
    }
    out[i] = added > length && first && after[i].second < *first;
  }
  return out;
}

}  // namespace ojs::broker
