// Batch PUSH: every key each job touches is declared (see push_batch.lua).
#include "broker/store/job_store.hpp"
#include "broker/store/keys.hpp"

namespace ojs::broker {

BatchOutcome JobStore::push_batch(const std::vector<BatchJob>& jobs) {
  std::vector<std::string> keys{keys::job_directory, keys::queue_directory};
  std::vector<std::string> args{std::to_string(jobs.size())};
  for (const auto& j : jobs) {
    for (auto& k : {keys::job(j.queue, j.id), keys::ready(j.queue, j.class_id), keys::delayed(j.queue), keys::seq(j.queue),
                    keys::events(j.queue), keys::classes(j.queue), keys::classes_version(j.queue), keys::escalations(j.queue),
                    keys::reservation_waits(j.queue)})
      keys.push_back(k);
    for (auto& a : {j.id, j.queue, j.class_id, j.class_json, rank_text(j.rank_base),
                    optional_text(j.scheduled_at_ms), optional_text(j.escalate_after_ms),
                    optional_text(j.reservation_timeout_ms), std::to_string(j.fields.size())})
      args.push_back(a);
    append_fields(args, j.fields);
  }
  const auto reply = redis_.eval("push_batch", keys, args);
  BatchOutcome out;
  if (reply.type != RedisValue::Type::array || reply.elements.size() < 2) throw std::runtime_error("malformed push_batch reply");
  if (reply.elements[0].str == "duplicate") {
    out.status = TransitionStatus::duplicate;
    out.duplicate_id = reply.elements[1].str;
    return out;
  }
  for (const auto& snapshot : reply.elements[1].elements) out.jobs.push_back(JobRecord::from_flat_array(snapshot));
  return out;
}

}  // namespace ojs::broker
