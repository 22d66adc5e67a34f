// Why a class waits: the refusals of many workers folded into one summary, e.g.
// "0/12 workers: 8 have < 80 GB per GPU, 4 lack label region=us-east-1".
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "ojs/ml/predicates.hpp"

namespace ojs::ml {

struct WorkerJudgement {
  std::string worker_id;
  Judgement judgement;
};

// {workers_seen, eligible, code, by_code: {code: workers}, by_predicate: {name: {count,
//  code, sample_reason, summary, sample_worker}}, message}. A worker refused by several
// predicates counts under each. Predicates are listed in the message by count, highest
// first. `code` is the fleet's verdict (ojs/ml/verdict.hpp): ok when a worker may take
// it, unresolvable when every worker seen never could, else held, preemptible or wait;
// the message ends with it unless ok ("0/3 workers: ... [unresolvable]").
nlohmann::json diagnose(const std::vector<WorkerJudgement>& records);

// Just the message part of diagnose().
std::string diagnosis_message(const std::vector<WorkerJudgement>& records);

}  // namespace ojs::ml
