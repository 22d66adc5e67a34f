// The job directory: the global slot's id -> queue hash, written ahead of the
// job itself (see reserve_ids).
#include "broker/store/job_directory.hpp"

#include <algorithm>

#include "broker/store/job_store_internal.hpp"

namespace ojs::broker {

using detail::kSlice;

bool JobDirectory::reserve_id(const std::string& id, const std::string& queue) { return !reserve_ids({{id, queue}}); }

namespace {
// Drops the directory entries of ids this call reserved, for a request then refused.
void release_ids(RedisPool& redis, const std::vector<std::string>& ids) {
  for (std::size_t at = 0; at < ids.size(); at += kSlice) {
    std::vector<std::string> cmd{"HDEL", keys::job_directory};
    for (std::size_t i = at; i < std::min(ids.size(), at + kSlice); ++i) cmd.push_back(ids[i]);
    redis.command(cmd);
  }
}
}  // namespace

// The directory (global slot) is written before the job (its queue's slot): a crash
// between the two leaves an entry without a job, never a job nobody can find.
// All or none: when an id is taken nothing is registered, no id and no queue. The
// ids are read before any is written, so a hostile producer's refused batches
// cannot grow the directory; an id a concurrent PUSH takes in between
// has this call's own entries released.
std::optional<std::string> JobDirectory::reserve_ids(const std::vector<std::pair<std::string, std::string>>& ids) {
  // An id is taken only if its job really exists (a PUSH interrupted between the
  // two writes leaves a dangling entry, which is reused).
  // Nor is an id a workflow holds for a step or callback it stores later.
  const auto taken = [this](const std::string& id) {
    const auto existing = queue_of(id);
    if (existing && redis_.command({"EXISTS", keys::job(*existing, id)}).integer == 1) return true;
    return redis_.command({"HEXISTS", keys::workflow_job_ids, id}).integer == 1;
  };
  for (std::size_t at = 0; at < ids.size(); at += kSlice) {
    std::vector<std::string> read{"HMGET", keys::job_directory};
    for (std::size_t i = at; i < std::min(ids.size(), at + kSlice); ++i) read.push_back(ids[i].first);
    const auto entries = redis_.command(read);
    for (std::size_t k = 0; k < entries.elements.size(); ++k)
      if (!entries.elements[k].is_nil() && taken(ids[at + k].first)) return ids[at + k].first;
  }

  std::vector<std::vector<std::string>> cmds;
  for (const auto& [id, queue] : ids) cmds.push_back(detail::job_directory_entry(id, queue));
  const auto replies = redis_.pipeline(cmds);
  std::vector<std::string> written;  // this call's entries: released if an id turns out taken
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto& [id, queue] = ids[i];
    if (replies[i].integer != 1) {
      if (taken(id)) {  // a concurrent PUSH stored it since the read
        release_ids(redis_, written);
        return id;
      }
      redis_.command({"HSET", keys::job_directory, id, queue});
    }
    written.push_back(id);
  }
  std::vector<std::vector<std::string>> queues;
  for (const auto& [id, queue] : ids) queues.push_back(detail::queue_directory_entry(queue));
  redis_.pipeline(queues);
  return std::nullopt;
}

std::optional<std::string> JobDirectory::reserve_workflow_ids(const std::string& workflow_id,
                                                          const std::vector<std::pair<std::string, std::string>>& ids) {
  if (auto taken = reserve_ids(ids)) return taken;
  std::vector<std::vector<std::string>> cmds;
  for (std::size_t from = 0; from < ids.size(); from += kSlice) {  // one HSET per slice, not one huge command
    std::vector<std::string> hset{"HSET", keys::workflow_job_ids};
    for (std::size_t i = from; i < std::min(ids.size(), from + kSlice); ++i) {
      hset.push_back(ids[i].first);
      hset.push_back(workflow_id);
    }
    cmds.push_back(std::move(hset));
  }
  if (!cmds.empty()) redis_.pipeline(cmds);
  return std::nullopt;
}

std::optional<std::string> JobDirectory::queue_of(const std::string& id) {
  if (auto queue = detail::hints().claimed_queue(redis_.endpoint().describe() + '|' + id)) return queue;
  auto v = redis_.command({"HGET", keys::job_directory, id});
  if (v.is_nil()) return std::nullopt;
  return v.str;
}

std::map<std::string, std::vector<std::string>> JobDirectory::group_by_queue(const std::vector<std::string>& ids) {
  std::map<std::string, std::vector<std::string>> out;
  for (std::size_t from = 0; from < ids.size(); from += kSlice) {
    const auto to = std::min(ids.size(), from + kSlice);
    std::vector<std::string> hmget{"HMGET", keys::job_directory};
    hmget.insert(hmget.end(), ids.begin() + static_cast<std::ptrdiff_t>(from), ids.begin() + static_cast<std::ptrdiff_t>(to));
    const auto reply = redis_.command(hmget);
    for (std::size_t i = 0; i < reply.elements.size(); ++i)
      if (!reply.elements[i].is_nil()) out[reply.elements[i].str].push_back(ids[from + i]);
  }
  return out;
}

void JobDirectory::forget(const std::string& id) {
  redis_.pipeline({{"HDEL", keys::job_directory, id}, {"HDEL", keys::workflow_job_ids, id}});
}

}  // namespace ojs::broker
