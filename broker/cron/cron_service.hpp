// Cron jobs (spec/ojs-cron.md): registration, listing, removal, and the ticker
// that enqueues each due occurrence exactly once across any number of brokers
// (a leader lease keeps one ticker busy; the tick itself is a compare-and-set).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "broker/jobs/job_service.hpp"
#include "broker/store/cron_store.hpp"

namespace ojs::broker {

class CronService {
 public:
  CronService(JobService& jobs, std::int64_t tick_interval_ms);

  // Registers or replaces a cron; accepts the spec's shape ({name, cron, type,
  // args, options, timezone, overlap_policy, enabled, description}) and the
  // conformance cases' ({name, expression, job_template{type, args, options}}).
  // Throws 400 naming the field. Returns the cron as GET shows it.
  nlohmann::json put(const nlohmann::json& body);
  nlohmann::json get(const std::string& name);     // 404 when unknown
  nlohmann::json list();                            // {"crons": [...]}
  nlohmann::json remove(const std::string& name);  // the removed cron; 404 when unknown
  // One ticker pass (the maintenance loop calls it): fires every due cron once.
  void run_once();

 private:
  JobService& jobs_;
  CronStore store_;
  std::string owner_;
  std::int64_t lease_ms_;

  nlohmann::json view(const std::string& name, const CronRecord& record);
  BatchJob tick_job(const std::string& name, const nlohmann::json& definition, std::int64_t tick_ms);
  void fire(const std::string& name, const nlohmann::json& definition, const CronRecord& record, std::int64_t tick_ms,
            std::int64_t now);
  void cancel_previous_run(const std::string& name, const CronRecord& record);
  static std::vector<std::int64_t> deferred_ticks(const CronRecord& record);  // enqueue policy, oldest first
};

}  // namespace ojs::broker
