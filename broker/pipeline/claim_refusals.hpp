// Filter plugins `budget` (queue budget and per-tenant quota) and `rate_limit`: the
// claim script compares and sets their counters atomically and answers which one
// stopped it; these turn its answer into the refusal the diagnosis records. Both are
// code wait: the jobs holding the budget or the rate window free it as they end.
#pragma once
#include <string>

#include "broker/store/job_store.hpp"
#include "ojs/ml/predicates.hpp"

namespace ojs::broker {

ml::Refusal budget_refusal(const BudgetBlock& block);
// kind: the claim's rate_limited answer, concurrency | rate.
ml::Refusal rate_limit_refusal(const std::string& kind);

}  // namespace ojs::broker
