#include "broker/store/unique_store.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

#include "broker/store/keys.hpp"

namespace ojs::broker {

// Three steps in three slots, ordered so that a crash between them loses nothing
// that was acknowledged: (1) the policy against the holder (push_unique.lua, the
// holder's queue), (2) the key taken by compare-and-set (unique_claim.lua, global),
// (3) the job pushed (push.lua, its queue). The id is reserved in the directory first.
UniquePushOutcome UniqueStore::push(const BatchJob& job, const std::string& uniqueness_key, const std::vector<std::string>& states,
                                    std::optional<std::int64_t> period_ms, const std::string& on_conflict) {
  // A key whose holder has no job yet is a PUSH between steps 2 and 3 (wait for it)
  // or a leftover of a crash there (taken over after these rounds).
  constexpr int kMissingRounds = 10;
  constexpr int kRounds = 8 + kMissingRounds;
  UniquePushOutcome out;
  JobStore jobs(redis_);
  if (!jobs.reserve_id(job.id, job.queue)) {
    out.kind = UniquePushOutcome::Kind::duplicate_id;
    return out;
  }
  std::string states_csv;
  for (const auto& s : states) states_csv += (states_csv.empty() ? "" : ",") + s;
  const auto unique_key = keys::unique(uniqueness_key);
  int missing = 0;
  // The holder may change between the reads and the scripts: they compare and
  // answer `retry`; a few rounds settle any realistic race.
  for (int round = 0; round < kRounds; ++round) {
    const auto held = redis_.command({"GET", unique_key});
    const std::string seen = held.is_nil() ? std::string() : held.str;
    BatchJob row = job;
    if (const auto space = seen.find(' '); space != std::string::npos) {
      const auto holder_queue = seen.substr(0, space), holder_id = seen.substr(space + 1);
      const auto cls = redis_.command({"HGET", keys::job(holder_queue, holder_id), "class"});
      const std::string holder_class = cls.is_nil() ? std::string() : cls.str;
      const auto reply = redis_.eval("push_unique",
                                     {keys::job(holder_queue, holder_id), keys::ready(holder_queue, holder_class),
                                      keys::delayed(holder_queue), keys::events(holder_queue), keys::stats(holder_queue),
                                      keys::class_heads(holder_queue)},
                                     {job.id, holder_class, states_csv, optional_text(period_ms), on_conflict});
      if (reply.type != RedisValue::Type::array || reply.elements.empty()) throw std::runtime_error("malformed push_unique reply");
      const auto& word = reply.elements[0].str;
      if (word == "retry") continue;
      if (word == "missing" && ++missing < kMissingRounds) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      if (word == "ignored") {
        out.kind = UniquePushOutcome::Kind::ignored;
        out.job = JobRecord::from_flat_array(reply.elements.at(1));
        return out;
      }
      if (word == "conflict") {
        out.kind = UniquePushOutcome::Kind::conflict;
        out.holder_id = reply.elements.at(1).str;
        out.holder_state = reply.elements.at(2).str;
        return out;
      }
      if (word == "replaced" && !reply.elements.at(1).str.empty()) row.scheduled_at_ms = std::stoll(reply.elements.at(1).str);
    }
    const auto claim = redis_.eval("unique_claim", {unique_key}, {seen, job.queue + " " + job.id, optional_text(period_ms)});
    if (claim.elements.at(0).str == "retry") continue;
    const auto t = jobs.push(row);
    if (t.status == TransitionStatus::duplicate) {
      out.kind = UniquePushOutcome::Kind::duplicate_id;
      return out;
    }
    out.job = t.job;
    return out;
  }
  throw std::runtime_error("uniqueness key " + uniqueness_key + " kept changing; try again");
}

}  // namespace ojs::broker
