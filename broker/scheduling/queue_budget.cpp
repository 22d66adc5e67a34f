#include "broker/scheduling/queue_budget.hpp"

namespace ojs::broker {

std::optional<std::string> QueueBudget::blocking(const BudgetCharge& job, const BudgetCharge& freed) const {
  if (job.tpu_chips > 0) {
    if (max_tpu_chips && tpu_chips_in_use - freed.tpu_chips + job.tpu_chips > *max_tpu_chips) return "max_total_tpu_chips";
    if (job.gpus <= 0) return std::nullopt;  // the GPU limits count GPU jobs
  }
  if (max_gpus && gpus_in_use - freed.gpus + job.gpus > *max_gpus) return "max_total_gpus";
  if (max_jobs && gpu_jobs - freed.jobs + job.jobs > *max_jobs) return "max_concurrent_gpu_jobs";
  if (max_gpu_mem_mb && gpu_mem_mb_in_use - freed.gpu_mem_mb + job.gpu_mem_mb > *max_gpu_mem_mb) return "max_total_gpu_memory_gb";
  return std::nullopt;
}

std::optional<BudgetBlock> QueueBudget::block(const std::string& class_id, const BudgetCharge& job) const {
  if (job.gpus <= 0 && job.tpu_chips <= 0) return std::nullopt;  // only GPU and TPU jobs are charged
  const auto kind = blocking(job);
  if (!kind) return std::nullopt;
  if (*kind == "max_total_tpu_chips") return BudgetBlock{class_id, tpu_chips_in_use, *max_tpu_chips, *kind};
  if (*kind == "max_total_gpus") return BudgetBlock{class_id, gpus_in_use, *max_gpus, *kind};
  if (*kind == "max_concurrent_gpu_jobs") return BudgetBlock{class_id, gpu_jobs, *max_jobs, *kind};
  return BudgetBlock{class_id, gpu_mem_mb_in_use, *max_gpu_mem_mb, *kind};
}

void QueueBudget::charge(const BudgetCharge& job) {
  if (job.tpu_chips > 0) tpu_chips_in_use += job.tpu_chips;
  if (job.gpus <= 0) return;
  gpus_in_use += job.gpus;
  gpu_jobs += job.jobs;
  gpu_mem_mb_in_use += job.gpu_mem_mb;
}

std::optional<BudgetBlock> tenant_quota_block(const TenantQuotaUse& quotas, const std::string& class_id, const std::string& tenant,
                                              long long gpus) {
  if (gpus <= 0 || tenant.empty()) return std::nullopt;
  auto limit = quotas.limits.find(tenant);
  if (limit == quotas.limits.end()) limit = quotas.limits.find("*");
  if (limit == quotas.limits.end()) return std::nullopt;
  const auto used = quotas.used.find(tenant);
  const long long in_use = used == quotas.used.end() ? 0 : used->second;
  if (in_use + gpus <= limit->second) return std::nullopt;
  return BudgetBlock{class_id, in_use, limit->second, "tenant_quota:" + tenant};
}

}  // namespace ojs::broker
