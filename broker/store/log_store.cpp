#include "broker/store/log_store.hpp"

#include "broker/store/keys.hpp"

namespace ojs::broker {

LogAppendOutcome LogStore::append(const std::string& queue, const std::string& id, const std::string& worker_id,
                                  long long max_bytes, long long skipped,
                                  const std::vector<std::pair<std::string, std::string>>& chunks) {
  std::vector<std::string> args{worker_id, std::to_string(max_bytes), std::to_string(skipped)};
  append_fields(args, chunks);
  const auto reply = redis_.eval("log_append", {keys::job(queue, id), keys::log(queue, id)}, args);
  LogAppendOutcome out;
  const auto& word = reply.elements.at(0).str;
  if (word == "not_found") out.status = TransitionStatus::not_found;
  else if (word == "conflict") {
    out.status = TransitionStatus::conflict;
    out.holder = reply.elements.at(1).str;
  } else {
    out.bytes = reply.elements.at(1).integer;
    out.dropped = reply.elements.at(2).integer;
  }
  return out;
}

namespace {

LogPage page_of(const std::vector<RedisValue>& replies) {
  LogPage page;
  for (const auto& e : replies[1].elements) {
    LogEntry entry{e.elements.at(0).str, {}, {}};
    const auto& fields = e.elements.at(1).elements;
    for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
      if (fields[i].str == "s") entry.stream = fields[i + 1].str;
      else if (fields[i].str == "d") entry.data = fields[i + 1].str;
    }
    page.entries.push_back(std::move(entry));
  }
  const auto& f = replies[0].elements;
  if (!f.empty() && !f[0].is_nil()) page.state = f[0].str;
  if (f.size() > 1 && !f[1].is_nil()) page.dropped = std::stoll(f[1].str);
  return page;
}

}  // namespace

LogPage LogStore::read(const std::string& queue, const std::string& id, const std::string& after, int count) {
  return page_of(redis_.pipeline({{"HMGET", keys::job(queue, id), "state", "log_dropped"},
                                  {"XRANGE", keys::log(queue, id), after.empty() ? "-" : "(" + after, "+", "COUNT", std::to_string(count)}}));
}

LogPage LogStore::read_back(const std::string& queue, const std::string& id, const std::string& before, const std::string& after,
                            int count) {
  return page_of(redis_.pipeline({{"HMGET", keys::job(queue, id), "state", "log_dropped"},
                                  {"XREVRANGE", keys::log(queue, id), before.empty() ? "+" : "(" + before,
                                   after.empty() ? "-" : "(" + after, "COUNT", std::to_string(count)}}));
}

}  // namespace ojs::broker
