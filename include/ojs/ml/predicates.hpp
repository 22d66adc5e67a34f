// Matching as small named predicates, in the manner of the Kubernetes scheduler
// framework's filter plugins: each looks at one aspect, passes or returns a
// Refusal that says why with the numbers involved.
//
// Two phases:
//  * static  — depends only on the requirement class and the worker's capability
//              fingerprint, so the broker memoises it per (class id, fingerprint);
//  * dynamic — depends on what is running now: free GPUs / devices, anti-affinity,
//              free CPU cores, host memory and TPU chips.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/device_assignment.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/verdict.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::ml {

// A structured value in a refusal: {"have": 40, "need": 80}.
using FactValue = std::variant<double, std::string>;
using Facts = std::vector<std::pair<std::string, FactValue>>;

struct Refusal {
  std::string predicate;  // stable name, e.g. "gpu_memory"
  std::string reason;     // full sentence for one worker: "has 40 GB per GPU, job needs >= 80 GB"
  std::string summary;    // class-level phrase that follows a worker count: "have < 80 GB per GPU"
  Facts facts;            // the numbers in the reason
  // What the refusal means (ojs/ml/verdict.hpp): a static predicate's is unresolvable
  // (this worker never could), a dynamic one's wait (busy now) unless even an idle
  // worker could not take the job.
  VerdictCode code = VerdictCode::unresolvable;
};
nlohmann::json to_json(const Refusal& r);  // {predicate, code, reason, summary, facts:{...}}

struct Judgement {
  std::vector<Refusal> refusals;  // every failing predicate, not only the first
  std::vector<int> devices;       // chosen device indices when eligible and devices[] known
  // Refusals (code held) that apply only to some of the class's jobs, e.g. the
  // locality hold of jobs younger than the delay: the class stays eligible for the
  // others, and the diagnosis applies them to the job asked about.
  std::vector<Refusal> holds;
  bool eligible() const { return refusals.empty(); }
  VerdictCode code() const;  // ok, or worker_code() over the refusals
};
nlohmann::json to_json(const Judgement& j);
// Reads back what to_json(Refusal) wrote (a record without a code: unresolvable for a
// static predicate's name, wait for the others).
Refusal refusal_from_json(const nlohmann::json& j);

enum class Phase { static_, dynamic };

// What a predicate sees. caps is never null inside a predicate: judge() handles a
// worker without capabilities before running any.
struct MatchContext {
  const Requirements& req;
  const Capabilities& caps;
  const WorkerLoad* load;  // null in the static phase
  const AssignmentOptions& assignment;
  std::vector<int>* devices_out;  // where free_gpus records its assignment
};

using PredicateFn = std::optional<Refusal> (*)(const MatchContext&);
struct Predicate {
  std::string_view name;
  Phase phase;
  PredicateFn check;
};

// All predicates in evaluation order: capabilities-independent cheap ones first.
// Names: accelerator gpu_type gpu_count gpu_memory gpu_compute_capability
// gpu_interconnect tpu host_memory cpu_cores storage shm node_selector
// required_affinity model_pin runtime model_format | anti_affinity free_gpus
// free_cpu_cores free_host_memory free_tpu_chips (what running jobs declared is held).
// (A worker with no capabilities facing hard constraints is refused once by the
// pseudo-predicate "capabilities".)
std::span<const Predicate> predicates();

// Static phase; memoise the result per (class id, fingerprint(caps)).
// caps == nullptr: a worker that sent no capabilities.
Judgement judge_static(const Requirements& req, const Capabilities* caps);

// Dynamic phase: anti_affinity against load.active, free_gpus against
// load.busy_devices / gpus_in_use, choosing devices when caps->devices is known.
Judgement judge_dynamic(const Requirements& req, const Capabilities* caps, const WorkerLoad& load,
                        const AssignmentOptions& assignment = {});

// Both phases, all refusals. Judgement::devices holds the assignment when eligible.
Judgement judge(const Requirements& req, const Capabilities* caps, const WorkerLoad& load,
                const AssignmentOptions& assignment = {});

// Fast path: stops at the first failing predicate, builds no refusal text for
// the passing ones. Same answer as judge(...).eligible().
bool fits(const Requirements& req, const Capabilities* caps, const WorkerLoad& load,
          const AssignmentOptions& assignment = {});
bool fits_static(const Requirements& req, const Capabilities* caps);

}  // namespace ojs::ml
