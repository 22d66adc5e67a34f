#include "broker/store/unique_store.hpp"

#include <chrono>
#include <stdexcept>

#include "broker/store/job_directory.hpp"
#include "broker/store/keys.hpp"
#include "ojs/core/fibers.hpp"

namespace ojs::broker {

// Four steps in three slots: (1) the policy decided against the holder, writing
// nothing (push_unique.lua 'check', the holder's queue), (2) the key taken by
// compare-and-set (unique_claim.lua, global), (3) a replaced holder cancelled,
// naming the new job (push_unique.lua 'apply'), (4) the job pushed (push.lua, its
// queue). Only the PUSH that took the key cancels the holder, so concurrent
// replacers never cancel for a job that is not then stored, and the
// id is reserved in the directory only once the policy lets the job in. A
// crash between (3) and (4) loses the replaced holder's run, as before.
UniquePushOutcome UniqueStore::push(const BatchJob& job, const std::string& uniqueness_key, const std::vector<std::string>& states,
                                    std::optional<std::int64_t> period_ms, const std::string& on_conflict) {
  // A key whose holder has no job yet is a PUSH between steps 2 and 4 (wait for it)
  // or a leftover of a crash there (taken over after these rounds).
  constexpr int kMissingRounds = 10;
  constexpr int kRounds = 8 + kMissingRounds;
  UniquePushOutcome out;
  JobStore jobs(redis_);
  JobDirectory directory(redis_);
  bool reserved = false;
  const auto refused = [&](UniquePushOutcome::Kind kind) {
    if (reserved) directory.forget(job.id);  // reserved in an earlier round; the job was never stored
    out.kind = kind;
    return out;
  };
  std::string states_csv;
  for (const auto& s : states) states_csv += (states_csv.empty() ? "" : ",") + s;
  const auto unique_key = keys::unique(uniqueness_key);
  const auto self = job.queue + " " + job.id;
  int missing = 0;
  // The holder may change between the reads and the scripts: they compare and
  // answer `retry`; a bounded number of rounds, then 409 (contended), never a 500.
  for (int round = 0; round < kRounds; ++round) {
    const auto held = redis_.command({"GET", unique_key});
    const std::string seen = held.is_nil() ? std::string() : held.str;
    BatchJob row = job;
    std::vector<std::string> holder_keys;  // set when the holder is to be replaced
    std::vector<std::string> holder_args;
    if (const auto space = seen.find(' '); space != std::string::npos) {
      const auto holder_queue = seen.substr(0, space), holder_id = seen.substr(space + 1);
      const auto cls = redis_.command({"HGET", keys::job(holder_queue, holder_id), "class"});
      const std::string holder_class = cls.is_nil() ? std::string() : cls.str;
      std::vector<std::string> script_keys{keys::job(holder_queue, holder_id), keys::ready(holder_queue, holder_class),
                                           keys::delayed(holder_queue),       keys::events(holder_queue),
                                           keys::stats(holder_queue),         keys::class_heads(holder_queue),
                                           keys::finished_prefix(holder_queue), keys::on_hold(holder_queue)};
      std::vector<std::string> args{job.id, holder_class, states_csv, optional_text(period_ms), on_conflict, "check"};
      const auto reply = redis_.eval("push_unique", script_keys, args);
      if (reply.type != RedisValue::Type::array || reply.elements.empty()) throw std::runtime_error("malformed push_unique reply");
      const auto& word = reply.elements[0].str;
      if (word == "retry") continue;
      if (word == "missing" && ++missing < kMissingRounds) {
        fibers::sleep_for(std::chrono::milliseconds(20));  // a fiber yields its I/O thread meanwhile
        continue;
      }
      if (word == "ignored") {
        out.job = JobRecord::from_flat_array(reply.elements.at(1));
        return refused(UniquePushOutcome::Kind::ignored);
      }
      if (word == "conflict") {
        out.holder_id = reply.elements.at(1).str;
        out.holder_state = reply.elements.at(2).str;
        return refused(UniquePushOutcome::Kind::conflict);
      }
      if (word == "replaced") {
        if (!reply.elements.at(1).str.empty()) row.scheduled_at_ms = std::stoll(reply.elements.at(1).str);
        holder_keys = std::move(script_keys);
        args.back() = "apply";
        holder_args = std::move(args);
      }
    }
    if (!reserved) {
      if (!directory.reserve_id(job.id, job.queue)) {
        out.kind = UniquePushOutcome::Kind::duplicate_id;
        return out;
      }
      reserved = true;
    }
    const auto claim = redis_.eval("unique_claim", {unique_key}, {seen, self, optional_text(period_ms)});
    if (claim.elements.at(0).str == "retry") continue;
    if (!holder_keys.empty()) {
      const auto reply = redis_.eval("push_unique", holder_keys, holder_args);
      const auto& word = reply.elements.at(0).str;
      // free / missing: the holder finished or went meanwhile, nothing to cancel.
      if (word != "replaced" && word != "free" && word != "missing") {
        // It started (conflict) or was re-ranked (retry) since the check: the key goes back to it.
        redis_.eval("unique_claim", {unique_key}, {self, seen, optional_text(period_ms)});
        if (word == "conflict") {
          out.holder_id = reply.elements.at(1).str;
          out.holder_state = reply.elements.at(2).str;
          return refused(UniquePushOutcome::Kind::conflict);
        }
        continue;
      }
    }
    const auto t = jobs.push(row);
    if (t.status == TransitionStatus::duplicate) {
      out.kind = UniquePushOutcome::Kind::duplicate_id;
      return out;
    }
    out.job = t.job;
    return out;
  }
  return refused(UniquePushOutcome::Kind::contended);
}

}  // namespace ojs::broker
