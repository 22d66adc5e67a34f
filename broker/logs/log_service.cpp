#include "broker/logs/log_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <functional>

#include "broker/admin/job_listing.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxChunks = 256;  // per POST: a worker ships every second or so
// What one request may say its worker skipped: far more than any output, and within
// what the log's count (a Lua number) holds exactly however many requests add to it.
constexpr long long kMaxSkippedBytes = 1LL << 40;
constexpr int kPage = 1000;              // entries per read (a page, one follow poll, one step of a tail's look back)

// Output is bytes: what is not UTF-8 is shown as U+FFFD (JSON carries text only).
std::string as_text(const std::string& bytes) {
  return json::parse(json(bytes).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
}

std::int64_t ms_of(const std::string& cursor) {
  try {
    return std::stoll(cursor.substr(0, cursor.find('-')));
  } catch (...) {
    return 0;
  }
}

json entry_json(const LogEntry& e) {
  return {{"id", e.id}, {"stream", e.stream}, {"at", format_rfc3339(ms_of(e.id))}, {"data", as_text(e.data)}};
}

bool is_cursor(const std::string& s) {
  const auto dash = s.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == s.size() || s.size() > 41) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '-'; }) &&
         s.find('-', dash + 1) == std::string::npos;
}

// A cursor's two parts are what Redis stream ids are: unsigned 64-bit numbers.
bool fits_u64(const std::string& digits) {
  static const std::string kMax = "18446744073709551615";
  return digits.size() < kMax.size() || (digits.size() == kMax.size() && digits <= kMax);
}

// A page answers at most kPage entries and about kPageBytes of data (an entry over the
// bound still goes alone): what one request costs is bounded by both.
constexpr std::size_t kPageBytes = 1 << 20;
// tail=N looks back at most this far for the start of its N lines (a log of 1-byte
// chunks without newlines is one line of a million entries): beyond, it starts at the
// oldest entry looked at and says `truncated`.
constexpr std::size_t kTailScanEntries = 10 * kPage;
constexpr std::size_t kTailScanBytes = 4 << 20;

// Up to kPage entries from a cursor, in reads of growing counts (4, 16, 64, ...) that
// stop once about kPageBytes are in: a log of big chunks costs a page's bytes per
// read, not a thousand chunks. `more`: the log may go on past them.
struct Bounded {
  LogPage page;
  bool more = false;
};

Bounded read_bounded(const std::function<LogPage(const std::string& cursor, int count)>& read, std::string cursor) {
  Bounded out;
  std::size_t bytes = 0;
  int count = 4;
  for (bool first = true;; first = false) {
    LogPage page = read(cursor, count);
    if (first) {
      out.page.state = page.state;
      out.page.dropped = page.dropped;
    }
    const bool short_read = page.entries.size() < static_cast<std::size_t>(count);
    for (auto& e : page.entries) {
      bytes += e.data.size();
      out.page.entries.push_back(std::move(e));
    }
    const auto have = out.page.entries.size();
    if (page.state.empty() || short_read || have >= static_cast<std::size_t>(kPage) || bytes >= kPageBytes) {
      out.more = !short_read && !page.state.empty();
      return out;
    }
    cursor = out.page.entries.back().id;
    count = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(count) * 4, kPage - have));
  }
}

// The newest entries, newest first, back to the start of the last `lines` lines (a
// final line without its newline counts), the oldest of them cut to where that line
// starts; `truncated` when the look back stopped at its bound first.
struct TailScan {
  std::vector<LogEntry> newest_first;
  std::string newest_id;  // the log's last entry ("" = none after the query's cursor)
  std::string state;
  long long dropped = 0;
  bool truncated = false;
};

TailScan scan_tail(LogStore& store, const std::string& queue, const std::string& id, const std::string& after, long long lines) {
  TailScan out;
  long long seen = 0;
  bool skip_final_newline = true;
  std::size_t bytes = 0;
  std::string before;
  for (;;) {
    auto [page, more] = read_bounded([&](const std::string& cursor, int count) { return store.read_back(queue, id, cursor, after, count); },
                                     before);
    if (before.empty()) {
      out.state = page.state;
      out.dropped = page.dropped;
      if (!page.entries.empty()) out.newest_id = page.entries.front().id;
    }
    if (page.state.empty() || lines <= 0) return out;
    const bool last_page = !more;
    if (!last_page) before = page.entries.back().id;  // read before the entries move out
    for (auto& e : page.entries) {
      auto& d = e.data;
      for (std::size_t k = d.size(); k-- > 0;) {
        if (d[k] != '\n') {
          skip_final_newline = false;
          continue;
        }
        if (skip_final_newline) {
          skip_final_newline = false;
          continue;
        }
        if (++seen == lines) {
          // The line starts after this newline: in this entry, or with the next one.
          if (k + 1 < d.size()) {
            d.erase(0, k + 1);
            out.newest_first.push_back(std::move(e));
          }
          return out;
        }
      }
      bytes += d.size();
      out.newest_first.push_back(std::move(e));
      if (out.newest_first.size() >= kTailScanEntries || bytes >= kTailScanBytes) {
        out.truncated = true;
        return out;
      }
    }
    if (last_page) return out;
  }
}

// Entries from `first`, oldest first, within one page's bounds; how many were taken.
std::size_t page_entries(std::vector<LogEntry>::const_iterator first, std::vector<LogEntry>::const_iterator last, json& entries) {
  std::size_t taken = 0, bytes = 0;
  for (auto it = first; it != last && taken < static_cast<std::size_t>(kPage); ++it) {
    if (taken > 0 && bytes + it->data.size() > kPageBytes) break;
    bytes += it->data.size();
    entries.push_back(entry_json(*it));
    ++taken;
  }
  return taken;
}

// The first page of a tail: its entries (JSON, with their ids) and where paging goes on.
struct TailPage {
  json entries = json::array();
  std::vector<std::string> ids;
  std::string next, state;
  bool more = false, truncated = false;
  long long dropped = 0;
};

TailPage tail_page(LogStore& store, const std::string& queue, const std::string& id, const LogQuery& query) {
  auto scan = scan_tail(store, queue, id, query.after, *query.tail);
  if (scan.state.empty()) throw job_not_found(id);
  std::vector<LogEntry> tail(std::make_move_iterator(scan.newest_first.rbegin()), std::make_move_iterator(scan.newest_first.rend()));
  TailPage out;
  const auto taken = page_entries(tail.begin(), tail.end(), out.entries);
  for (std::size_t i = 0; i < taken; ++i) out.ids.push_back(tail[i].id);
  out.more = taken < tail.size();
  // Paging on from a tail is `since=next`, as from any page.
  out.next = out.more ? tail[taken - 1].id : scan.newest_id.empty() ? query.after : scan.newest_id;
  out.state = scan.state;
  out.truncated = scan.truncated;
  out.dropped = scan.dropped;
  return out;
}

}  // namespace

LogService::LogService(JobService& jobs, LogStore& store, LogOptions options)
    : jobs_(jobs), store_(store), options_(options) {}

LogService::~LogService() { stop(); }

void LogService::start() {
  std::lock_guard lock(mutex_);
  if (reader_.joinable()) return;
  reader_ = std::thread([this] { run(); });
}

void LogService::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& f : follows_) f.sub->finish(sse_frame("", "server.shutdown", json::object().dump()));
    follows_.clear();
  }
  wake_.notify_all();
  if (reader_.joinable()) reader_.join();
}

json LogService::append(const json& body) {
  if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
  const std::string worker = require_worker_id(body.value("worker_id", json()), "worker_id");
  if (!body.contains("job_id") || !body["job_id"].is_string() || !is_uuidv7(body["job_id"].get<std::string>()))
    throw invalid_field("job_id", "must be a lowercase UUIDv7 job id");
  const std::string id = body["job_id"].get<std::string>();
  if (!body.contains("chunks") || !body["chunks"].is_array()) throw invalid_field("chunks", "must be an array of {stream, data}");
  const auto& chunks = body["chunks"];
  if (chunks.size() > kMaxChunks) throw invalid_field("chunks", "at most " + std::to_string(kMaxChunks) + " chunks per request");
  long long skipped = 0;
  if (body.contains("skipped_bytes")) {
    const auto& s = body["skipped_bytes"];
    if (!s.is_number_integer() || s.get<long long>() < 0 || s.get<long long>() > kMaxSkippedBytes)
      throw invalid_field("skipped_bytes", "must be an integer from 0 to " + std::to_string(kMaxSkippedBytes));
    skipped = s.get<long long>();
  }
  std::vector<std::pair<std::string, std::string>> parts;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const std::string at = "chunks[" + std::to_string(i) + "]";
    const auto& c = chunks[i];
    if (!c.is_object()) throw invalid_field(at, "must be an object {stream, data}");
    const auto stream = c.value("stream", json());
    if (!stream.is_string() || (stream != "stdout" && stream != "stderr")) throw invalid_field(at + ".stream", "must be stdout or stderr");
    const auto data = c.value("data", json());
    if (!data.is_string()) throw invalid_field(at + ".data", "must be a string");
    parts.emplace_back(stream.get<std::string>(), data.get<std::string>());
  }
  const auto queue = jobs_.queue_of_or_404(id);
  const auto out = store_.append(queue, id, worker, options_.max_bytes, skipped, parts);
  if (out.status == TransitionStatus::not_found) throw job_not_found(id);
  if (out.status == TransitionStatus::conflict)
    throw OjsError(ErrorCode::conflict, "job " + id + " is not held by worker " + worker + ": only its worker writes its log",
                   {{"job_id", id}, {"worker_id", worker}});
  return {{"job_id", id}, {"kept_bytes", out.bytes}, {"dropped_bytes", out.dropped}};
}

LogQuery LogService::parse_query(const std::string& tail, const std::string& since) {
  LogQuery q;
  if (!tail.empty()) {
    long long n = -1;
    if (tail.size() <= 9 && std::all_of(tail.begin(), tail.end(), [](char c) { return c >= '0' && c <= '9'; })) n = std::stoll(tail);
    if (n < 0) throw invalid_field("tail", "must be a whole number of lines >= 0");
    q.tail = n;
  }
  if (!since.empty()) {
    if (is_cursor(since)) {
      const auto dash = since.find('-');
      // The last possible id has no successor (Redis refuses a range after it).
      if (!fits_u64(since.substr(0, dash)) || !fits_u64(since.substr(dash + 1)) ||
          since == "18446744073709551615-18446744073709551615")
        throw invalid_field("since", "a cursor's parts are at most 18446744073709551615 (<ms>-<seq>), below the last possible id");
      q.after = since;
    } else if (auto ms = parse_rfc3339(since)) {
      // Every entry at or after that ms; from the first entry for a time at or before 1970.
      if (*ms > 0) q.after = std::to_string(*ms - 1) + "-18446744073709551615";
    } else {
      throw invalid_field("since", "must be a cursor from `next` (<ms>-<seq>) or an RFC 3339 time");
    }
  }
  return q;
}

json LogService::read(const std::string& id, const LogQuery& query) {
  const auto queue = jobs_.queue_of_or_404(id);
  if (query.tail) {
    const auto t = tail_page(store_, queue, id, query);
    return {{"job_id", id}, {"state", t.state}, {"entries", t.entries}, {"next", t.next}, {"more", t.more},
            {"dropped_bytes", t.dropped}, {"truncated", t.truncated}};
  }
  auto [page, more_kept] = read_bounded([&](const std::string& cursor, int count) { return store_.read(queue, id, cursor, count); },
                                        query.after);
  if (page.state.empty()) throw job_not_found(id);
  json entries = json::array();
  const auto taken = page_entries(page.entries.begin(), page.entries.end(), entries);
  const bool more = taken < page.entries.size() || more_kept;
  const std::string next = taken == 0 ? query.after : page.entries[taken - 1].id;
  return {{"job_id", id}, {"state", page.state}, {"entries", entries}, {"next", next}, {"more", more}, {"dropped_bytes", page.dropped}};
}

std::shared_ptr<EventSubscription> LogService::follow(const std::string& id, const LogQuery& query) {
  const auto queue = jobs_.queue_of_or_404(id);
  auto sub = std::make_shared<EventSubscription>(EventFilter{}, std::string(), 1000);
  std::string after = query.after;
  if (query.tail) {  // the tail's first page, then on from it
    const auto t = tail_page(store_, queue, id, query);
    std::string frames;
    for (std::size_t i = 0; i < t.ids.size(); ++i) frames += sse_frame(t.ids[i], "log", t.entries[i].dump());
    sub->offer_front(std::move(frames));
    after = t.next;
  }
  // Counted from here until the stream ends or its client goes, whether or not the
  // reader is polling it just now.
  auto slot = options_.slots ? options_.slots->take() : nullptr;
  if (options_.slots && !slot)
    throw OjsError(ErrorCode::unavailable,
                   "too many open event streams and log follows: this broker serves at most " +
                       std::to_string(options_.slots->limit()) + " (--max-event-streams); retry later or read without follow",
                   {{"retry_after_s", 5}, {"limit", options_.slots->limit()}, {"reason", "too_many_streams"}});
  sub->hold_slot(std::move(slot));
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw OjsError(ErrorCode::unavailable, "the broker is stopping", {{"reason", "stopping"}});
    follows_.push_back(Follow{queue, id, after, sub});
  }
  wake_.notify_all();
  return sub;
}

bool LogService::poll(Follow& f) {
  if (f.sub->abandoned()) return false;
  // A client that does not read keeps at most about a page waiting: the log is read
  // on from its cursor once the connection took what waits.
  if (f.sub->queued_bytes() >= kPageBytes) return true;
  auto [page, more] = read_bounded([&](const std::string& cursor, int count) { return store_.read(f.queue, f.id, cursor, count); },
                                   f.after);
  json entries = json::array();
  const auto taken = page_entries(page.entries.begin(), page.entries.end(), entries);
  for (std::size_t i = 0; i < taken; ++i) f.sub->offer(page.entries[i].id, sse_frame(page.entries[i].id, "log", entries[i].dump()));
  if (taken > 0) f.after = page.entries[taken - 1].id;
  const bool caught_up = taken == page.entries.size() && !more;
  if (page.state.empty() || (caught_up && admin::is_finished_state(page.state))) {
    const json end = {{"job_id", f.id}, {"state", page.state.empty() ? json() : json(page.state)}, {"dropped_bytes", page.dropped}};
    f.sub->finish(sse_frame("", "end", end.dump()));
    return false;
  }
  f.sub->keep_alive(EventSubscription::Clock::now(), options_.keep_alive);
  return true;
}

void LogService::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (follows_.empty()) {
      wake_.wait(lock, [this] { return stopping_ || !follows_.empty(); });
      continue;
    }
    std::vector<Follow> work = std::move(follows_);
    follows_.clear();
    lock.unlock();
    std::vector<Follow> kept;
    for (auto& f : work) {
      try {
        if (poll(f)) kept.push_back(std::move(f));
      } catch (const std::exception& e) {  // Redis away: the follow waits for it
        spdlog::debug("log follow of job {}: {}", f.id, e.what());
        kept.push_back(std::move(f));
      }
    }
    lock.lock();
    for (auto& f : kept) follows_.push_back(std::move(f));
    wake_.wait_for(lock, options_.poll, [this] { return stopping_; });
  }
  for (auto& f : follows_) f.sub->finish(sse_frame("", "server.shutdown", json::object().dump()));
  follows_.clear();
}

}  // namespace ojs::broker
