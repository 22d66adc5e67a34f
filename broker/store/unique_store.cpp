#include "broker/store/unique_store.hpp"

#include <stdexcept>

#include "broker/store/keys.hpp"

namespace ojs::broker {

UniquePushOutcome UniqueStore::push(const BatchJob& job, const std::string& uniqueness_key, const std::vector<std::string>& states,
                                    std::optional<std::int64_t> period_ms, const std::string& on_conflict) {
  std::string states_csv;
  for (const auto& s : states) states_csv += (states_csv.empty() ? "" : ",") + s;
  const auto unique_key = keys::unique(uniqueness_key);
  // The holder may change between the read and the script: the script compares
  // and answers `retry`; a few rounds settle any realistic race.
  for (int round = 0; round < 8; ++round) {
    const auto held = redis_.command({"GET", unique_key});
    const std::string seen = held.is_nil() ? std::string() : held.str;
    std::string holder_queue, holder_id, holder_class;
    if (const auto space = seen.find(' '); space != std::string::npos) {
      holder_queue = seen.substr(0, space);
      holder_id = seen.substr(space + 1);
      const auto cls = redis_.command({"HGET", keys::job(holder_queue, holder_id), "class"});
      holder_class = cls.is_nil() ? std::string() : cls.str;
    }
    std::vector<std::string> k{keys::job_directory, keys::queue_directory,
                               keys::job(job.queue, job.id), keys::ready(job.queue, job.class_id), keys::delayed(job.queue),
                               keys::seq(job.queue), keys::events(job.queue), keys::classes(job.queue),
                               keys::classes_version(job.queue), unique_key};
    if (holder_id.empty()) {
      for (int i = 0; i < 5; ++i) k.push_back(unique_key);  // unused placeholders
    } else {
      for (auto& key : {keys::job(holder_queue, holder_id), keys::ready(holder_queue, holder_class), keys::delayed(holder_queue),
                        keys::events(holder_queue), keys::stats(holder_queue)})
        k.push_back(key);
    }
    k.push_back(keys::escalations(job.queue));
    k.push_back(keys::reservation_waits(job.queue));
    std::vector<std::string> args{job.id, job.queue, job.class_id, job.class_json, rank_text(job.rank_base),
                                  optional_text(job.scheduled_at_ms),
                                  seen, holder_class, states_csv, optional_text(period_ms),
                                  on_conflict,
                                  optional_text(job.escalate_after_ms), optional_text(job.reservation_timeout_ms)};
    append_fields(args, job.fields);
    const auto reply = redis_.eval("push_unique", k, args);
    if (reply.type != RedisValue::Type::array || reply.elements.empty()) throw std::runtime_error("malformed push_unique reply");
    const auto& word = reply.elements[0].str;
    if (word == "retry") continue;
    UniquePushOutcome out;
    if (word == "ok") {
      out.job = JobRecord::from_flat_array(reply.elements.at(1));
    } else if (word == "ignored") {
      out.kind = UniquePushOutcome::Kind::ignored;
      out.job = JobRecord::from_flat_array(reply.elements.at(1));
    } else if (word == "conflict") {
      out.kind = UniquePushOutcome::Kind::conflict;
      out.holder_id = reply.elements.at(1).str;
      out.holder_state = reply.elements.at(2).str;
    } else if (word == "duplicate") {
      out.kind = UniquePushOutcome::Kind::duplicate_id;
    } else {
      throw std::runtime_error("unexpected push_unique reply: " + word);
    }
    return out;
  }
  throw std::runtime_error("uniqueness key " + uniqueness_key + " kept changing; try again");
}

}  // namespace ojs::broker
