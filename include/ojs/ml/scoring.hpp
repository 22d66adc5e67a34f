// Soft preferences: how much an eligible worker suits a class. Never decides
// eligibility; the one exception, locality_hold, is bounded in time.
#pragma once
#include <cstdint>
#include <string>

#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::ml {

struct ScoringOptions {
  double locality_bonus = 100;         // worker has the preferred model loaded
  double packing_weight = 10;          // best-fit GPU packing, 0..packing_weight
  std::int64_t locality_delay_ms = 5000;  // delay scheduling bound
  // Whether Score::explanation is written. [hotpath] A FETCH scores every eligible class
  // and reads only the numbers: the text cost ~2k instructions per class.
  bool explain = true;
};

struct Score {
  double total = 0;
  double affinity = 0;  // sum of weights of matched preferred terms
  double locality = 0;
  double packing = 0;
  std::string explanation;  // empty unless options.explain: "affinity 80 (zone In [us-east-1a]); locality 100 (llama loaded); packing 10 (4 of 4 free GPUs)"
};

// load may be null (then all the worker's GPUs count as free).
Score score(const Requirements& req, const Capabilities& caps, const WorkerLoad* load = nullptr,
            const ScoringOptions& options = {});

// Delay scheduling: true while the class prefers a model this worker lacks and the
// job has waited less than options.locality_delay_ms; after that it goes anywhere,
// so a soft rule never blocks a job forever. A worker without capabilities is cold.
bool locality_hold(const Requirements& req, const Capabilities* caps, std::int64_t waited_ms,
                   const ScoringOptions& options = {});

}  // namespace ojs::ml
