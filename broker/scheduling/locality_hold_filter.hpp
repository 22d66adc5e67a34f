// Filter plugin `locality_hold` (code held): delay scheduling. A class that prefers
// a model this worker lacks, or that a recently seen worker suits better, gives this
// worker only jobs that already waited the locality delay; younger jobs are held.
// The hold is per job (its age), so it travels in Judgement::holds: FETCH claims the
// old jobs (the claim script skips jobs enqueued after the cutoff) and the diagnosis
// applies it to the job asked about.
#pragma once
#include <cstdint>
#include <string>

#include "ojs/ml/predicates.hpp"

namespace ojs::broker {

// cold: the preferred model is not loaded here; otherwise better_worker scores higher.
ml::Refusal locality_hold_refusal(const std::string& model_id, bool cold, const std::string& better_worker,
                                  std::int64_t delay_ms, std::int64_t now_ms);

// Whether a recorded locality hold still holds a job enqueued at enqueued_ms (it has
// not yet waited the delay). For a class (enqueued_ms unknown: the record's own time,
// i.e. a job pushed just before that FETCH).
bool hold_applies(const ml::Refusal& hold, std::int64_t enqueued_ms, std::int64_t now_ms);

}  // namespace ojs::broker
