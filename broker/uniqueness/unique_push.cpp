#include "broker/uniqueness/unique_push.hpp"

#include "broker/preemption/preemption.hpp"
#include "broker/store/unique_store.hpp"
#include "broker/uniqueness/unique_policy.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

PushResult push_job(UniquePushSources& s, const nlohmann::json& body) {
  PushService& jobs = s.push;
  PreparedJob prepared = jobs.prepare(body, true);  // this broker's queue config: push.lua checks its version
  const auto policy = parse_unique_policy(prepared.job.document);
  if (!policy) {
    auto warnings = prepared.warnings;
    return {jobs.push(body, std::move(prepared)), false, std::move(warnings)};
  }
  prepared = jobs.prepare(body);  // push_unique.lua does not check the config version: read it afresh

  const auto& job = prepared.job;
  UniqueStore& store = s.unique;
  const BatchJob row = store_record(prepared);  // with its scheduling indexes, written by the same script
  const auto outcome = store.push(row, policy->key, policy->states, policy->period_ms, policy->on_conflict);
  using Kind = UniquePushOutcome::Kind;
  switch (outcome.kind) {
    case Kind::conflict:
      throw OjsError(ErrorCode::duplicate,
                     outcome.holder_state == "active" && policy->on_conflict != "reject"
                         ? "a job matching the uniqueness key is active and cannot be replaced"
                         : "a job matching the uniqueness key already exists",
                     {{"existing_job_id", outcome.holder_id}, {"existing_job_state", outcome.holder_state},
                      {"uniqueness_key", policy->key}});
    case Kind::contended:
      throw OjsError(ErrorCode::conflict, "the uniqueness key changed hands on every try (concurrent PUSHes); nothing was stored, retry",
                     {{"uniqueness_key", policy->key}, {"rule", "contended"}});
    case Kind::duplicate_id:
      throw OjsError(ErrorCode::duplicate, "a job with id " + job.id + " already exists", {{"job_id", job.id}});
    case Kind::ignored:
      return {outcome.job.envelope_text(), true, prepared.warnings};
    case Kind::created:
      break;
  }
  return {outcome.job.envelope_text(), false, prepared.warnings};
}

}  // namespace ojs::broker
