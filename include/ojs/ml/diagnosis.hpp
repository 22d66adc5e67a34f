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

// {workers_seen, eligible, by_predicate: {name: {count, sample_reason, summary,
//  sample_worker}}, message}. A worker refused by several predicates counts under
// each. Predicates are listed in the message by count, highest first.
nlohmann::json diagnose(const std::vector<WorkerJudgement>& records);

// Just the message part of diagnose().
std::string diagnosis_message(const std::vector<WorkerJudgement>& records);

}  // namespace ojs::ml
