#include "broker/access_and_governance.hpp"

#include <spdlog/spdlog.h>

#include <stdexcept>

namespace ojs::broker::governance {

AdmissionPolicy admission_policy(const BrokerConfig& config) {
  AdmissionPolicy p;
  auto bound = [](auto v) { return v > 0 ? std::optional(v) : std::nullopt; };
  p.global_bounds.max_gpu_count = bound(config.max_job_gpus);
  p.global_bounds.max_gpu_memory_gb = bound(config.max_job_gpu_memory_gb);
  p.global_bounds.max_memory_gb = bound(config.max_job_memory_gb);
  p.global_bounds.max_timeout_seconds = bound(config.max_job_timeout_seconds);
  p.admin_label_prefixes = config.admin_label_prefixes;
  p.allowed_models = config.allowed_models;
  return p;
}

bool is_loopback_address(const std::string& address) {
  return address == "localhost" || address == "::1" || address.rfind("127.", 0) == 0;
}

std::unique_ptr<Installed> install(const BrokerConfig& config, RedisPool& redis, PushService& jobs, Router& router,
                                   ApiContext& api) {
  auto out = std::make_unique<Installed>();
  auth::AccessOptions access;
  if (!config.auth_file.empty()) access.principals = auth::load_token_file(config.auth_file);
  access.push_rate_per_second = config.push_rate_per_second;
  access.push_burst = config.push_burst;
  out->access = std::make_unique<auth::AccessControl>(std::move(access));
  if (out->access->anonymous_mode()) {
    if (!is_loopback_address(config.listen_address) && !config.allow_anonymous)
      throw std::runtime_error("no --auth-file: refusing to serve anonymous callers on " + config.listen_address +
                               " (give --auth-file, or --allow-anonymous to accept the risk)");
    spdlog::warn("*** ANONYMOUS MODE: no --auth-file, every caller is an admin. For local use only. ***");
  }
  out->access->install(router);
  jobs.set_batch_admission([access = out->access.get()](std::size_t n) {
    if (const auto* who = auth::current_identity()) access->charge_push(*who, n);
  });

  out->config_store = std::make_unique<QueueConfigStore>(redis);
  out->configs = std::make_unique<QueueConfigs>(*out->config_store);
  out->admission = std::make_unique<Admission>(*out->configs, admission_policy(config));
  jobs.set_admission([admission = out->admission.get()](NewJob& job, JobOrder& order, bool cached, long long& version,
                                                        ml::Requirements& requirements) {
    return admission->admit(job, auth::current_identity(), &order, cached, &version, &requirements);
  });
  register_governance_api(router, api, *out->configs);
  return out;
}

}  // namespace ojs::broker::governance
