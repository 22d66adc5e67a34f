// Filter plugins `budget` (queue budget and per-tenant quota) and `rate_limit`: the
// claim script compares and sets their counters atomically and answers which one
// stopped it; these turn its answer into the refusal the diagnosis records. Both are
// code wait: the jobs holding the budget or the rate window free it as they end.
// `gang_forming` (held) is claim_gang's answer that the worker joined (or already
// holds its GPUs for) a gang still missing members.
#pragma once
#include <string>

#include "broker/store/job_store.hpp"
#include "ojs/ml/predicates.hpp"

namespace ojs::broker {

ml::Refusal budget_refusal(const BudgetBlock& block);
// kind: the claim's rate_limited answer, concurrency | rate.
ml::Refusal rate_limit_refusal(const std::string& kind);
// job_id: the forming gang's job; rank: this worker's; size: the gang's (0: unknown).
ml::Refusal gang_forming_refusal(const std::string& job_id, int rank, int size);

}  // namespace ojs::broker
