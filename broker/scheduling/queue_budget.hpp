// The limits a claim must stay within, written once: a queue's GPU and TPU budget
// (config limits against the ledger) and its tenants' GPU quotas. The claim's
// decision (claim_decision.cpp), preemption's budget victims and the forecast
// judge a charge by these; claim.lua re-checks the same limits when it commits.
#pragma once
#include <optional>
#include <string>

#include "broker/store/claim_store.hpp"
#include "broker/store/job_store.hpp"

namespace ojs::broker {

// What a job holds of a queue's budget, or what leaving jobs give back.
struct BudgetCharge {
  long long gpus = 0;
  long long jobs = 0;
  long long gpu_mem_mb = 0;
  long long tpu_chips = 0;
};

// A queue's GPU budget (limits from `ojs:{q}:config`, use from `ojs:{q}:ledger`).
struct QueueBudget : BudgetUse {
  QueueBudget() = default;
  explicit QueueBudget(const BudgetUse& use) : BudgetUse(use) {}
  // The limit a job charged `job` would pass once jobs holding `freed` leave
  // (max_total_gpus, max_concurrent_gpu_jobs, max_total_gpu_memory_gb,
  // max_total_tpu_chips), none when it fits. A TPU job is held to the TPU limit
  // only: a job asks for GPUs or TPU chips, never both (ml requirements).
  std::optional<std::string> blocking(const BudgetCharge& job, const BudgetCharge& freed = {}) const;
  bool allows(const BudgetCharge& job, const BudgetCharge& freed = {}) const { return !blocking(job, freed); }
  // The refusal of `job` as the claim reports it (in use, limit: GPUs, jobs, MB or chips).
  std::optional<BudgetBlock> block(const std::string& class_id, const BudgetCharge& job) const;
  void charge(const BudgetCharge& job);
};

// A tenant's GPU quota (its own, else "*"), none when it has none; the tenant-less
// and GPU-less are never limited (_lib.lua tenant_block, the commit's check).
std::optional<BudgetBlock> tenant_quota_block(const TenantQuotaUse& quotas, const std::string& class_id, const std::string& tenant,
                                              long long gpus);

}  // namespace ojs::broker
