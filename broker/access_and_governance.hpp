// App wiring (beside app.cpp, so governance/ never depends on api/): wires
// access control and queue governance into a broker: the access
// middleware (tokens, roles, PUSH rate limit), the PUSH admission hook
// (defaults, bounds, limits, label keys, allow-lists, tenant) and the admin
// routes. Refuses an anonymous broker on a non-loopback address unless
// --allow-anonymous was given.
#pragma once
#include <memory>

#include "broker/api/api.hpp"
#include "broker/auth/access_control.hpp"
#include "broker/governance/admission.hpp"
#include "broker/governance/queue_configs.hpp"

namespace ojs::broker::governance {

struct Installed {
  std::unique_ptr<QueueConfigStore> config_store;
  std::unique_ptr<QueueConfigs> configs;
  std::unique_ptr<Admission> admission;
  std::unique_ptr<auth::AccessControl> access;
};

AdmissionPolicy admission_policy(const BrokerConfig& config);
bool is_loopback_address(const std::string& address);

// Throws std::runtime_error when the configuration is unsafe or the token file is bad.
std::unique_ptr<Installed> install(const BrokerConfig& config, RedisPool& redis, PushService& jobs, Router& router,
                                   ApiContext& api);

}  // namespace ojs::broker::governance
