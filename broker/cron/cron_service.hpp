// Cron jobs (spec/ojs-cron.md): registration, listing, removal, and the ticker
// that enqueues each due occurrence exactly once across any number of brokers
// (a leader lease keeps one ticker busy; the tick itself is a compare-and-set).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "broker/cron/cron_limits.hpp"
#include "broker/jobs/job_service.hpp"
#include "broker/jobs/push_service.hpp"
#include "broker/store/cron_store.hpp"

namespace ojs::broker {

inline constexpr std::size_t kMaxCronExpressionLength = 256;  // the longest sensible expression is ~100
inline constexpr std::size_t kMaxTicksPerPass = 1000;          // due crons one ticker pass fires; the rest wait a pass

class CronService {
 public:
  // push prepares each tick's job; jobs cancels a replaced run (overlap policy).
  CronService(PushService& push, JobService& jobs, CronStore store, std::int64_t tick_interval_ms, CronLimits limits = {});

  // Every call takes the caller's tenant scope ("" = every tenant: an admin or an
  // unpinned token): a pinned caller sees, replaces and removes only its tenant's
  // crons; another tenant's is 404 (and its name, taken, a 409 on `name`).
  //
  // Registers or replaces a cron; accepts the spec's shape ({name, cron, type,
  // args, options, timezone, overlap_policy, enabled, description}) and the
  // conformance cases' ({name, expression, job_template{type, args, options}}).
  // Throws 400 naming the field, 422 naming the cap. Returns the cron as GET shows it.
  // Its ticks push for the tenant the job resolves to now (the caller's), and take
  // PUSH tokens of the caller's identity (see set_tick_admission).
  nlohmann::json put(const nlohmann::json& body, const std::string& scope, const std::string& identity);
  nlohmann::json get(const std::string& name, const std::string& scope);     // 404 when unknown
  nlohmann::json list(const std::string& scope);                            // {"crons": [...]}
  nlohmann::json remove(const std::string& name, const std::string& scope);  // the removed cron; 404 when unknown
  // The PUSH rate limit for ticks: takes one PUSH token of the named identity (the
  // one that registered the cron); false when it has none left (the tick waits).
  void set_tick_admission(std::function<bool(const std::string& identity)> admit) { admit_tick_ = std::move(admit); }
  // One ticker pass (the maintenance loop calls it): fires every due cron once.
  // It reads the due crons only (the due index), never every registration.
  void run_once();

 private:
  PushService& push_;
  JobService& jobs_;
  CronStore store_;
  std::string owner_;
  std::int64_t lease_ms_;
  CronLimits limits_;
  std::function<bool(const std::string&)> admit_tick_;
  bool indexed_ = false;  // crons registered before the due index are indexed once

  nlohmann::json view(const std::string& name, const CronRecord& record);
  std::optional<CronRecord> in_scope(const std::string& name, const std::string& scope);
  BatchJob tick_job(const std::string& name, const nlohmann::json& definition, const std::string& tenant, std::int64_t tick_ms);
  bool tick_admitted(const std::string& name, const nlohmann::json& definition, const CronRecord& record, bool deferred_turn);
  void fire(const std::string& name, const nlohmann::json& definition, const CronRecord& record, std::int64_t tick_ms,
            std::int64_t now);
  void fire_deferred(const std::string& name);
  void cancel_previous_run(const std::string& name, const CronRecord& record);
  static std::vector<std::int64_t> deferred_ticks(const CronRecord& record);  // enqueue policy, oldest first
};

}  // namespace ojs::broker
