// Why a waiting job can never start, whatever ends: more GPUs than the queue's budget
// or its tenant's quota allows, or no live worker serving the queue that could ever take
// it (ml::judge_static), or not enough of them for its gang. The estimate says so
// instead of running placement forward.
#pragma once
#include <optional>
#include <string>

#include "broker/estimate/forecast.hpp"

namespace ojs::broker::estimate {

// Why no worker of the fleet could ever take `job` (nullopt: some could).
std::optional<std::string> never_fits(const Snapshot& s, const Waiting& job);

}  // namespace ojs::broker::estimate
