#include "broker/store/job_reads.hpp"

#include "broker/store/keys.hpp"

namespace ojs::broker {

std::optional<JobRecord> JobReads::get(const std::string& queue, const std::string& id) {
  auto v = redis_.command({"HGETALL", keys::job(queue, id)});
  if (v.elements.empty()) return std::nullopt;
  return JobRecord::from_flat_array(v);
}

std::optional<JobRecord> JobReads::get(const std::string& id) {
  auto queue = directory_.queue_of(id);
  if (!queue) return std::nullopt;
  return get(*queue, id);
}

std::vector<std::optional<JobRecord>> JobReads::get_many(const std::vector<std::pair<std::string, std::string>>& jobs) {
  std::vector<std::optional<JobRecord>> out;
  if (jobs.empty()) return out;
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [queue, id] : jobs) cmds.push_back({"HGETALL", keys::job(queue, id)});
  for (const auto& reply : redis_.pipeline(cmds)) {
    if (reply.elements.empty()) out.emplace_back();
    else out.emplace_back(JobRecord::from_flat_array(reply));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> JobReads::active_jobs(const std::string& queue) {
  auto ids = redis_.command({"ZRANGE", keys::active(queue), "0", "-1"});
  std::vector<std::vector<std::string>> cmds;
  for (const auto& id : ids.elements) cmds.push_back({"HGET", keys::job(queue, id.str), "worker_id"});
  std::vector<std::pair<std::string, std::string>> out;
  if (cmds.empty()) return out;
  auto replies = redis_.pipeline(cmds);
  for (std::size_t i = 0; i < replies.size(); ++i) out.emplace_back(ids.elements[i].str, replies[i].str);
  return out;
}

std::vector<std::string> JobReads::expired_active(const std::string& queue, std::int64_t now_ms, int limit) {
  auto v = redis_.command({"ZRANGEBYSCORE", keys::active(queue), "-inf", std::to_string(now_ms), "LIMIT", "0",
                           std::to_string(limit)});
  std::vector<std::string> out;
  for (const auto& e : v.elements) out.push_back(e.str);
  return out;
}

}  // namespace ojs::broker
