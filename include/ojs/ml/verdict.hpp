// The code of a scheduling verdict, in the manner of the Kubernetes scheduler
// framework's filter status: what a refusal means for the job, so callers read a
// code and never match predicate names.
//
//   ok            the worker may take it now
//   wait          busy now: it will fit this worker once work there ends
//   unresolvable  this worker can never take it, however idle (its hardware, labels,
//                 models); a class every worker of the fleet refuses so can never run
//   preemptible   freeing lower-priority work on this worker would let it run
//                 (a preemption for it is pending)
//   held          kept back on purpose for a while: locality delay, backfill window,
//                 capacity hold, reservation, forming gang
#pragma once
#include <optional>
#include <string_view>

namespace ojs::ml {

enum class VerdictCode { ok, wait, unresolvable, preemptible, held };

std::string_view to_string(VerdictCode code);
std::optional<VerdictCode> parse_verdict_code(std::string_view text);

// One worker's verdict from two of its refusals' codes (ok: no refusal): unresolvable
// wins (a worker that can never take the job cannot be helped by anything else), then
// the most specific explanation of the wait: held, preemptible, wait.
VerdictCode worker_code(VerdictCode a, VerdictCode b);

// The fleet's verdict from its workers': the most hopeful one (ok, then held,
// preemptible, wait); unresolvable only when every worker is.
VerdictCode fleet_code(VerdictCode a, VerdictCode b);

}  // namespace ojs::ml
