#include "broker/logs/log_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "broker/admin/job_listing.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxChunks = 256;  // per POST: a worker ships every second or so
constexpr int kPage = 1000;              // entries per read (GET without tail, one follow poll)


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

// The entries holding the last `lines` lines (a final line without its newline counts),
// the first of them cut to where that line starts.
std::vector<LogEntry> last_lines(std::vector<LogEntry> all, long long lines) {
  if (lines <= 0) return {};
  long long seen = 0;
  bool skip_final_newline = true;
  for (std::size_t i = all.size(); i-- > 0;) {
    const auto& d = all[i].data;
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
        all[i].data.erase(0, k + 1);
        return std::vector<LogEntry>(all.begin() + static_cast<long>(i), all.end());
      }
    }
  }
  return all;
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
    if (!s.is_number_integer() || s.get<long long>() < 0) throw invalid_field("skipped_bytes", "must be an integer >= 0");
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
      q.after = since;
    } else if (auto ms = parse_rfc3339(since)) {
      q.after = std::to_string(*ms - 1) + "-18446744073709551615";  // every entry at or after that ms
    } else {
      throw invalid_field("since", "must be a cursor from `next` (<ms>-<seq>) or an RFC 3339 time");
    }
  }
  return q;
}

json LogService::read(const std::string& id, const LogQuery& query) {
  const auto queue = jobs_.queue_of_or_404(id);
  LogPage page = store_.read(queue, id, query.after, kPage);
  if (page.state.empty()) throw job_not_found(id);
  bool more = page.entries.size() == static_cast<std::size_t>(kPage);
  if (query.tail) {  // the whole log (bounded by max_bytes), then its last lines
    while (more) {
      auto next = store_.read(queue, id, page.entries.back().id, kPage);
      more = next.entries.size() == static_cast<std::size_t>(kPage);
      page.entries.insert(page.entries.end(), std::make_move_iterator(next.entries.begin()), std::make_move_iterator(next.entries.end()));
    }
    const std::string last_id = page.entries.empty() ? query.after : page.entries.back().id;
    page.entries = last_lines(std::move(page.entries), *query.tail);
    json entries = json::array();
    for (const auto& e : page.entries) entries.push_back(entry_json(e));
    return {{"job_id", id}, {"state", page.state}, {"entries", entries}, {"next", last_id}, {"more", false}, {"dropped_bytes", page.dropped}};
  }
  json entries = json::array();
  for (const auto& e : page.entries) entries.push_back(entry_json(e));
  const std::string next = page.entries.empty() ? query.after : page.entries.back().id;
  return {{"job_id", id}, {"state", page.state}, {"entries", entries}, {"next", next}, {"more", more}, {"dropped_bytes", page.dropped}};
}

std::shared_ptr<EventSubscription> LogService::follow(const std::string& id, const LogQuery& query) {
  const auto queue = jobs_.queue_of_or_404(id);
  auto sub = std::make_shared<EventSubscription>(EventFilter{}, std::string(), 1000);
  {
    std::lock_guard lock(mutex_);
    if (stopping_) throw OjsError(ErrorCode::unavailable, "the broker is stopping");
    if (follows_.size() >= options_.max_follows)
      throw OjsError(ErrorCode::unavailable, "too many log follows open on this broker (" + std::to_string(options_.max_follows) + ")",
                     {{"retry_after_s", 5}});
    follows_.push_back(Follow{queue, id, query.after, sub});
  }
  wake_.notify_all();
  return sub;
}

bool LogService::poll(Follow& f) {
  if (f.sub->abandoned()) return false;
  LogPage page = store_.read(f.queue, f.id, f.after, kPage);
  for (const auto& e : page.entries) f.sub->offer(e.id, sse_frame(e.id, "log", entry_json(e).dump()));
  if (!page.entries.empty()) f.after = page.entries.back().id;
  const bool caught_up = page.entries.size() < static_cast<std::size_t>(kPage);
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
