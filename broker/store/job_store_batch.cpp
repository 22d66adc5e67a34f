// Batch PUSH: every key each job touches is declared (see push_batch.lua). The
// ids are reserved in the directory (global slot) first, then one script per
// queue stores that queue's jobs (one slot each, so it runs on a Redis Cluster).
#include <map>

#include "broker/store/job_directory.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/keys.hpp"

namespace ojs::broker {

BatchOutcome JobStore::push_batch(const std::vector<BatchJob>& jobs) {
  BatchOutcome out;
  std::vector<std::pair<std::string, std::string>> ids;
  for (const auto& j : jobs) ids.emplace_back(j.id, j.queue);
  JobDirectory directory(redis_);
  if (auto taken = directory.reserve_ids(ids)) {
    out.status = TransitionStatus::duplicate;
    out.duplicate_id = *taken;
    return out;
  }
  std::map<std::string, std::vector<std::size_t>> by_queue;  // queue -> request positions
  for (std::size_t i = 0; i < jobs.size(); ++i) by_queue[jobs[i].queue].push_back(i);
  out.jobs.resize(jobs.size());
  for (const auto& [queue, positions] : by_queue) {
    std::vector<BatchJob> part;
    for (const auto i : positions) part.push_back(jobs[i]);
    auto stored = push_batch_of_queue(part);
    if (stored.status == TransitionStatus::queue_full)  // the ids of this queue's part are free again
      for (const auto& j : part) directory.forget(j.id);
    // A concurrent PUSH took the id since, or the queue is full: the parts of other
    // queues stored before stay (each queue's part is atomic, a batch over queues is not).
    if (stored.status != TransitionStatus::ok) return stored;
    for (std::size_t k = 0; k < positions.size(); ++k) out.jobs[positions[k]] = std::move(stored.jobs[k]);
  }
  return out;
}

BatchOutcome JobStore::push_batch_of_queue(const std::vector<BatchJob>& jobs) {
  std::vector<std::string> keys;
  std::vector<std::string> args{std::to_string(jobs.size())};
  for (const auto& j : jobs) {
    for (auto& k : {keys::job(j.queue, j.id), keys::ready(j.queue, j.class_id), keys::delayed(j.queue), keys::seq(j.queue),
                    keys::events(j.queue), keys::classes(j.queue), keys::classes_version(j.queue), keys::class_heads(j.queue),
                    keys::escalations(j.queue), keys::reservation_waits(j.queue)})
      keys.push_back(k);
    for (auto& a : {j.id, j.queue, j.class_id, j.class_json, rank_text(j.rank_base),
                    optional_text(j.scheduled_at_ms), optional_text(j.escalate_after_ms),
                    optional_text(j.reservation_timeout_ms), std::to_string(j.fields.size())})
      args.push_back(a);
    append_fields(args, j.fields);
  }
  keys.push_back(keys::ready_prefix(jobs.front().queue));  // the queue's depth and bound
  keys.push_back(keys::config(jobs.front().queue));
  keys.push_back(keys::on_hold(jobs.front().queue));  // held jobs count in the depth
  std::vector<std::vector<std::string>> expiring;  // ahead of the script, as for a single PUSH
  for (const auto& j : jobs)
    if (auto entry = expiring_entry(j)) expiring.push_back(std::move(*entry));
  const auto reply = redis_.eval_after(expiring, "push_batch", keys, args);
  BatchOutcome out;
  if (reply.type != RedisValue::Type::array || reply.elements.size() < 2) throw std::runtime_error("malformed push_batch reply");
  if (reply.elements[0].str == "queue_full") {
    out.status = TransitionStatus::queue_full;
    out.full_queue = jobs.front().queue;
    out.full_detail = reply.elements[1].str;
    return out;
  }
  if (reply.elements[0].str == "duplicate") {
    out.status = TransitionStatus::duplicate;
    out.duplicate_id = reply.elements[1].str;
    return out;
  }
  for (const auto& snapshot : reply.elements[1].elements) out.jobs.push_back(JobRecord::from_flat_array(snapshot));
  return out;
}

}  // namespace ojs::broker
