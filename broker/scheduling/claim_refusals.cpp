#include "broker/scheduling/claim_refusals.hpp"

#include "ojs/ml/device_assignment.hpp"
#include "ojs/ml/types.hpp"

namespace ojs::broker {

ml::Refusal budget_refusal(const BudgetBlock& block) {
  ml::Refusal r;
  r.predicate = "budget";
  r.code = ml::VerdictCode::wait;
  const bool tenant = block.kind.rfind("tenant_quota:", 0) == 0;  // per-tenant quota (tenant_quota:<name>)
  const bool memory = block.kind == "max_total_gpu_memory_gb";  // in_use and limit come in MB
  const std::string what = block.kind == "max_total_gpus" || tenant ? " GPUs in use"
                           : memory                                 ? " GB of GPU memory in use"
                           : block.kind == "max_total_tpu_chips"    ? " TPU chips in use"
                                                                    : " GPU jobs running";
  const auto amount = [&](long long n) { return memory ? ml::format_number(ml::gpu_memory_gb(n)) : std::to_string(n); };
  r.summary = (tenant ? "tenant " + block.kind.substr(13) + " quota " : std::string("queue budget ")) + amount(block.in_use) +
              "/" + amount(block.limit) + what;
  r.reason = r.summary + " (" + block.kind + ")";
  const double scale = memory ? 1000.0 : 1.0;
  r.facts = {{"in_use", static_cast<double>(block.in_use) / scale},
             {"limit", static_cast<double>(block.limit) / scale},
             {"limit_name", block.kind}};
  return r;
}

ml::Refusal rate_limit_refusal(const std::string& kind) {
  ml::Refusal r;
  r.predicate = "rate_limit";
  r.code = ml::VerdictCode::wait;
  const bool concurrency = kind == "concurrency";
  r.summary = concurrency ? "queue rate limit: as many jobs run as rate_limit.concurrency allows"
                          : "queue rate limit: rate_limit.rate allows no more starts in this period";
  r.reason = r.summary + " (" + kind + ")";
  r.facts = {{"limit_name", concurrency ? std::string("rate_limit.concurrency") : std::string("rate_limit.rate")}};
  return r;
}

ml::Refusal gang_forming_refusal(const std::string& job_id, int rank, int size) {
  ml::Refusal r;
  r.predicate = "gang_forming";
  r.code = ml::VerdictCode::held;
  const std::string of = size > 0 ? " of " + std::to_string(size) : std::string();
  r.reason = "holds its GPUs as rank " + std::to_string(rank) + of + " of forming gang " + job_id +
             ": the gang starts once every member has joined";
  r.summary = "hold GPUs for a forming gang (waiting for its other members)";
  r.facts = {{"job_id", job_id}, {"rank", static_cast<double>(rank)}, {"size", static_cast<double>(size)}};
  return r;
}

}  // namespace ojs::broker
