#include "broker/store/usage_store.hpp"

#include <stdexcept>

#include "broker/store/keys.hpp"
#include "broker/store/settle.hpp"

namespace ojs::broker {

namespace {

// A field's TAB-separated parts.
std::vector<std::string> parts_of(const std::string& field) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (auto at = field.find('\t'); at != std::string::npos; at = field.find('\t', from)) {
    out.push_back(field.substr(from, at - from));
    from = at + 1;
  }
  out.push_back(field.substr(from));
  return out;
}

std::vector<RedisValue> hashes(RedisPool& redis, const std::vector<std::string>& queues, std::string (*key)(const std::string&)) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& q : queues) cmds.push_back({"HGETALL", key(q)});
  return cmds.empty() ? std::vector<RedisValue>{} : redis.pipeline(cmds);
}

// A glob matching the rollup fields of the hours [from, to] and few others (the
// caller keeps exactly the window's): their common decimal prefix, then the range of
// the next digit and any digits after it. Hours of different lengths: every field.
std::string hours_glob(std::int64_t from, std::int64_t to) {
  const auto a = std::to_string(from), b = std::to_string(to);
  if (a.size() != b.size() || from < 0) return "*";
  std::size_t common = 0;
  while (common < a.size() && a[common] == b[common]) ++common;
  std::string glob = a.substr(0, common);
  if (common < a.size()) {
    glob += std::string("[") + a[common] + "-" + b[common] + "]";
    glob.append(a.size() - common - 1, '?');
  }
  return glob + "\t*";
}

}  // namespace

void UsageStore::settle(const std::vector<std::string>& queues) { ojs::broker::settle(redis_, queues); }

std::vector<UsageTotal> UsageStore::totals(const std::vector<std::string>& queues) {
  settle(queues);
  std::vector<UsageTotal> out;
  const auto replies = hashes(redis_, queues, keys::usage_totals);
  for (std::size_t q = 0; q < replies.size(); ++q) {
    const auto& flat = replies[q].elements;
    for (std::size_t i = 0; i + 1 < flat.size(); i += 2) {
      const auto p = parts_of(flat[i].str);  // tenant, resource
      if (p.size() != 2) continue;
      out.push_back({queues[q], p[0], p[1], std::stoll(flat[i + 1].str)});
    }
  }
  return out;
}

// HSCAN with a MATCH on the window's hours, not HGETALL: what crosses the network
// is the window's rows, whatever the retention keeps, and each call does bounded work
// in Redis (COUNT). The queues' scans advance together, one pipelined round each.
std::vector<UsageHour> UsageStore::hours(const std::vector<std::string>& queues, std::int64_t from_hour, std::int64_t to_hour) {
  settle(queues);
  std::vector<UsageHour> out;
  const auto glob = hours_glob(from_hour, to_hour);
  std::vector<std::pair<std::size_t, std::string>> scans;  // queue index, cursor
  for (std::size_t q = 0; q < queues.size(); ++q) scans.emplace_back(q, "0");
  while (!scans.empty()) {
    std::vector<std::vector<std::string>> cmds;
    for (const auto& [q, cursor] : scans)
      cmds.push_back({"HSCAN", keys::usage_hours(queues[q]), cursor, "MATCH", glob, "COUNT", "1000"});
    const auto replies = redis_.pipeline(cmds);
    std::vector<std::pair<std::size_t, std::string>> next;
    for (std::size_t k = 0; k < replies.size(); ++k) {
      const auto q = scans[k].first;
      const auto& page = replies[k].elements;
      if (page.size() != 2) throw std::runtime_error("malformed HSCAN reply");
      const auto& flat = page[1].elements;
      for (std::size_t i = 0; i + 1 < flat.size(); i += 2) {
        const auto p = parts_of(flat[i].str);  // hour, tenant, type, worker, resource
        if (p.size() != 5 || p[0].empty()) continue;
        const auto hour = std::stoll(p[0]);
        if (hour < from_hour || hour > to_hour) continue;
        out.push_back({hour, queues[q], p[1], p[2], p[3], p[4], std::stoll(flat[i + 1].str)});
      }
      if (page[0].str != "0") next.emplace_back(q, page[0].str);
    }
    scans = std::move(next);
  }
  return out;
}

long long UsageStore::trim(const std::string& queue, std::int64_t before_hour) {
  // A page at a time: a rollup kept 90 days is large, and HKEYS would hold Redis while
  // it lists every field; each page's old fields go in one HDEL.
  long long removed = 0;
  std::string cursor = "0";
  do {
    const auto page = redis_.command({"HSCAN", keys::usage_hours(queue), cursor, "COUNT", "1000"});
    if (page.elements.size() != 2) throw std::runtime_error("malformed HSCAN reply");
    std::vector<std::string> hdel{"HDEL", keys::usage_hours(queue)};
    const auto& flat = page.elements[1].elements;
    for (std::size_t i = 0; i + 1 < flat.size(); i += 2) {
      const auto& field = flat[i].str;
      const auto tab = field.find('\t');
      if (tab == 0 || tab == std::string::npos) continue;
      if (std::stoll(field.substr(0, tab)) < before_hour) hdel.push_back(field);
    }
    if (hdel.size() > 2) removed += redis_.command(hdel).integer;
    cursor = page.elements[0].str;
  } while (cursor != "0");
  return removed;
}

}  // namespace ojs::broker
