// Governance at PUSH, in the order a job meets it: the queue's ml_defaults are
// written into the document; then the broker's global bounds and the queue's
// ml_limits (422; a job without a timeout gets max_timeout_seconds), admin-only label keys (403 for non-admins), the allow-list of
// model ids (422; checkpoint storage prefixes are checked by broker/preemption,
// --checkpoint-prefix); finally the job's tenant
// is resolved (meta.tenant_id, else the caller's token). PushService::push calls
// admit() through its admission hook before classifying the job.
#pragma once
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "broker/auth/identity.hpp"
#include "broker/governance/queue_configs.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/ml/requirements.hpp"

namespace ojs::broker::governance {

struct AdmissionPolicy {
  MlLimits global_bounds;                        // scope "broker"; protect unconfigured queues
  std::vector<std::string> admin_label_prefixes; // e.g. "node.ojs.io/": only admins may select on them
  std::vector<std::string> allowed_models;       // allowed model ids ("llama-*" = prefix); empty: any
};

class Admission {
 public:
  Admission(QueueConfigs& configs, AdmissionPolicy policy) : configs_(configs), policy_(std::move(policy)) {}

  // May edit job.document (defaults); throws OjsError to refuse; returns the tenant ("" = none).
  // `order` gets the queue's policy and the tenant's fair-share slot (the score's inputs).
  // `cached_config`: the queue config may come from this broker's cache (QueueConfigs::cached);
  // `config_version` gets the version of the config used, for the store to check;
  // `requirements` the job's ext_ml_* requirements as admitted (after the defaults): the
  // PUSH files the job by them instead of parsing them again.
  std::string admit(NewJob& job, const auth::Identity* caller, JobOrder* order = nullptr, bool cached_config = false,
                    long long* config_version = nullptr, ml::Requirements* requirements = nullptr);

  const AdmissionPolicy& policy() const { return policy_; }

 private:
  std::shared_ptr<const QueueConfig> adopt_job_rate_limit(const NewJob& job, std::shared_ptr<const QueueConfig> config);

  QueueConfigs& configs_;
  AdmissionPolicy policy_;
};

// The pieces, exposed for unit tests.
std::string resolve_tenant(const nlohmann::json& document, const auth::Identity* caller);
void check_label_keys(const ml::Requirements& requirements, const std::vector<std::string>& admin_prefixes);
void check_model_allowed(const ml::Requirements& requirements, const std::vector<std::string>& allowed_models);
// A job with no timeout (absent or 0) gets the tightest max_timeout_seconds of
// `bounds` (broker, queue) as its timeout_ms: a limit cannot be bypassed by omission.
void apply_timeout_bound(NewJob& job, const ml::Requirements& requirements, std::initializer_list<std::optional<long long>> bounds);

}  // namespace ojs::broker::governance
