// When a waiting job will start: placement run forward in time over a
// copy of the queue's state (docs/matching.md#start-estimates). Pure code, no Redis:
// broker/estimate/estimate_service.cpp reads the snapshot, the what-if edits a copy
// of it, bench/simulator can run it too.
//
// The run: at each instant (now, then each running job's end, each waiting job's due
// time), ended jobs leave their workers and give back the queue budget and their
// tenant's quota; then the claim's decision (decide_claim, as FETCH makes it: the
// queue's order, its budget, its tenants' quotas) names the next waiting job, and it
// takes the first live worker whose judgement (ml::judge: the same predicates FETCH
// runs) is eligible. A job that fits nowhere does not stop the ones behind it (the
// claim skips a class that does not fit), except a gang: while it forms it holds the
// workers that fit a member. A
// placed job runs for its declared duration (or its timeout, or its type's learned
// median); without one it never ends, as far as the run can tell. A job that prefers a
// model takes a worker without it only once the locality delay has passed
// (ml::locality_hold, the pipeline's locality_hold filter). After each instant's
// placements, a waiting class head that may preempt (may_preempt) and fits no worker
// preempts as the controller would (plan_capacity_preemption, choose_victims): its
// victims end at their grace period's end and the worker is held for its class.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/preemption/victims.hpp"
#include "broker/store/fair_shares.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/device_assignment.hpp"
#include "ojs/ml/requirements.hpp"
#include "ojs/ml/scoring.hpp"

namespace ojs::broker::estimate {

// Where a job's end (or run time) comes from, best first.
enum class EndSource { progress, declared, deadline, median, preempted, unknown };
const char* to_string(EndSource source);

// A running job's reported progress (the OJS progress extension, broker/store/lua/progress.lua):
// `fraction` (0..1) of its work done, reported at `reported_ms` (progress_updated_at), and
// the attempt's first report above 0, `base_fraction` at `base_ms` (progress_base,
// progress_base_at; base_ms 0: none kept, as for a job that reported before the broker kept it).
// `resumed`: the attempt resumed from a checkpoint saved before it started, so it need not
// have begun at 0 (a training loop reports its step of the whole run).
struct Progress {
  double fraction = 0;
  std::int64_t reported_ms = 0;
  double base_fraction = 0;
  std::int64_t base_ms = 0;
  bool resumed = false;
};
// Below this fraction a report alone is not trusted over the declared end: the first tenth
// of a run is where setup (data loading, compilation, a model's download) sits, which
// is seldom the pace of the rest, and an extrapolation from a small fraction
// multiplies its error by 1 / fraction (docs/matching.md#start-estimates).
constexpr double kProgressTrusted = 0.1;
// The progress made since the attempt's first report above 0 from which its pace is
// taken: that report comes after the setup, so the pace is the work's own and a
// twentieth of the run measures it (a job resumed from a checkpoint, whose first
// report is already far along, is measured the same way).
constexpr double kPaceSpan = 0.05;
// When a running job that started (its current attempt) at `started_ms` is expected to
// end by its reported progress, seen at `now_ms`, not before now:
// - by its pace: reported + (1 - fraction) * (reported - base) / (fraction - base_fraction),
//   once it made kPaceSpan of progress since its first report above 0;
// - else, for an attempt that began at 0 (not resumed) and has reported at least
//   kProgressTrusted: started + (reported - started) / fraction (progress linear in time
//   since the start, setup included);
// nullopt otherwise: too little reported, done (1: it ends any moment, its other end
// stands), made before this attempt started (a previous attempt's), or a resumed attempt
// with no pace yet, for which the time since its start says nothing.
std::optional<std::int64_t> progress_end(std::int64_t started_ms, const Progress& p, std::int64_t now_ms);

// A job running on a worker of the fleet (any queue).
struct Running {
  RunningJob job;             // gpus, devices, labels; declared_end_ms: the end the run uses (none: unknown)
  EndSource source = EndSource::unknown;
  bool charged = false;       // a job of the estimated queue: it holds that queue's budget
  std::string tenant;         // its tenant ("" = none), for the tenant quota
  // Its late end (kLateQuantile of what its end rests on, see late_ends); none: as declared_end_ms.
  std::optional<std::int64_t> late_end_ms;
  long long tpu_chips = 0;    // TPU chips charged to the estimated queue's budget (charged_tpu_chips): given back at its end
};

struct Worker {
  std::string id;
  ml::Capabilities caps;
  std::vector<Running> running;
  std::vector<int> drained;  // devices an admin drained: no job is placed there
};

// A waiting job of the queue.
struct Waiting {
  std::string id;
  std::string class_id;
  const ml::Requirements* req = nullptr;  // the class's requirements (outlives the snapshot)
  double score = 0;                       // its ready-set score: lower goes first
  std::string tenant;
  std::optional<std::int64_t> run_ms;     // how long it will run once placed (none: unknown)
  std::optional<std::int64_t> late_run_ms;  // the same at kLateQuantile (none: as run_ms)
  EndSource run_source = EndSource::unknown;
  std::int64_t due_ms = 0;                // not before (a scheduled job, a retry's backoff)
  std::int64_t enqueued_ms = 0;           // since when it waits (the locality hold counts from it)
  int class_rank = -1;                    // priority class rank (spot 0 .. reserved 2); -1: unknown, it does not preempt
};

// The workers a job takes at once: its gang's size, else one.
inline int members_of(const ml::Requirements& req) { return req.hard.gang.size > 1 ? req.hard.gang.size : 1; }
// The TPU chips a job charges to its queue's budget, as claim.lua charges them (a
// gang's claim charges none).
inline long long charged_tpu_chips(const ml::Requirements& req) { return members_of(req) > 1 ? 0 : req.hard.tpu.chip_count; }

struct Limits {
  QueueBudget budget;                              // max_total_gpus, max_concurrent_gpu_jobs, max_total_tpu_chips and their use
  TenantQuotaUse tenants;  // tenant -> max GPUs ('*': any other tenant), tenant -> GPUs charged
};

// What one estimate may cost at most: about a tenth of a second of a core (a 256-device
// worker and hundreds of waiting jobs reached seconds per diagnosis without it).
constexpr std::size_t kMaxRunWork = 2'000'000;

struct Snapshot {
  std::int64_t now_ms = 0;
  std::vector<Worker> workers;   // live workers that serve the queue
  Limits limits;
  std::vector<Waiting> waiting;  // sorted by score
  bool truncated = false;        // more jobs wait than were read: the later ones are not in the run
  // The run's work bound, in device checks (a placement check on a worker costs 1 + its
  // devices): an estimate or forecast that reaches it stops there, `truncated`.
  std::size_t max_work = kMaxRunWork;
  ml::AssignmentOptions assignment;
  ml::ScoringOptions scoring;    // locality_delay_ms: how long a job preferring a model waits for a warm worker
  std::int64_t capacity_hold_ms = 10000;  // --capacity-hold-ms: a worker freed by preemption is held this long past the grace
  struct Hold {  // a capacity hold in force: the worker's freed GPUs are kept for a preemptor
    std::string worker_id, for_job, class_id;  // class_id "" (another queue's preemptor): no class of this one takes the worker
    std::int64_t until_ms = 0;
    std::vector<std::string> victims;  // the jobs preempted for it
    bool backfill = false;  // a backfill reservation: the controller preempts nothing there (placement is not restricted)
  };
  std::vector<Hold> holds;
  bool preemption = true;  // the run preempts as the controller does (the broker always does; off: to measure without)
  // Under `policy: fair`: the tenants' shares when read (decayed use, held
  // now) and the config's fair_tenants (slots, weights, order). The run's decision
  // takes the jobs by them, as FETCH's does, with what the run places and ends
  // counted in what is held. nullopt: the score order.
  std::optional<FairShares> fair;
  std::string fair_layout_json;
};

struct Placement {
  std::string job_id;
  std::string tenant;  // the job's ("" = none): a tenant-pinned caller sees its own
  std::vector<std::string> worker_ids;  // a gang's members, else one
  std::int64_t start_ms = 0;
  std::optional<std::int64_t> late_start_ms;  // its start in the late run (Estimate::late_start_ms)
  std::optional<std::int64_t> end_ms;
};

struct Estimate {
  enum class Status { estimated, unresolvable, unknown };
  Status status = Status::unknown;
  std::int64_t start_ms = 0;
  std::vector<std::string> worker_ids;
  int position = 0;     // 1-based, among the jobs waiting in the queue's order
  int jobs_ahead = 0;
  int placed_ahead = 0;  // of those, how many the run placed before it
  std::map<EndSource, int> running_ends;  // running jobs (when it was estimated) whose ends it waited for, by source
  std::vector<std::string> kept_by;  // what kept it from an earlier start: max_total_gpus, tenant_quota, gang, ...
  std::vector<std::string> preempts;  // running jobs the run preempted for it (it starts once their grace periods end)
  // The start when every run time and end the estimate rests on falls at kLateQuantile of
  // what the queue learned (late_ends); none when that run does not place it.
  std::optional<std::int64_t> late_start_ms;
  std::string reason;   // unresolvable, unknown: why
  bool truncated = false;
  // A gang's sizes: the members the run places it with (members_of: an elastic gang's
  // min_size) and the most it may grow to once it runs; 0 when it is no gang.
  int gang_start_size = 0;
  int gang_max_size = 0;
};

// How long jobs run against what they declare: ran / declared of the queue's recently
// completed jobs that declared a duration (ext_ml_estimated_duration_seconds), sorted.
// Empty: nothing learned, a declared duration is taken as it is.
constexpr std::size_t kOverrunsKept = 256;  // the completed jobs whose ratios are read
struct Overruns {
  std::vector<double> ratios;
  static Overruns of(std::vector<double> ratios);  // sorts them
  // When a job that declared `declared_ms` and started at `started_ms` is expected to
  // end, seen at `now_ms`: the median of the ends the learned ratios give it among
  // those still ahead (what jobs that ran at least as long as it has did); its declared
  // end without ratios, or now once it has run past them all.
  // `quantile` other than the median: that quantile of those ends instead.
  std::int64_t end(std::int64_t started_ms, std::int64_t declared_ms, std::int64_t now_ms, double quantile = 0.5) const;
  // How long a job that declares `declared_ms` is expected to run once placed: the median
  // ratio's share (or the ratio at `quantile`).
  std::int64_t run(std::int64_t declared_ms, double quantile = 0.5) const;
};

// The late start (Estimate::late_start_ms, `start_at_p90`): the same run with every
// learned quantity at this quantile: declared ends and run times moved by the 90th
// percentile of the queue's overruns, learned run times at their 90th percentile. Not a
// joint 90th percentile (each job's late end at once is more pessimistic than that);
// bench/simulator measures how often jobs start by it (docs/benchmarks.md).
constexpr double kLateQuantile = 0.9;
// The element of the sorted, non-empty range [first, last) at `quantile` (0.5: the upper
// median, as the run has used).
template <typename It>
auto at_quantile(It first, It last, double quantile) {
  const auto n = static_cast<std::size_t>(last - first);
  const auto i = std::min(static_cast<std::size_t>(quantile * static_cast<double>(n)), n - 1);
  return *(first + static_cast<std::ptrdiff_t>(i));
}
template <typename T>
T at_quantile(const std::vector<T>& sorted, double quantile) {
  return at_quantile(sorted.begin(), sorted.end(), quantile);
}
// What the run's late start leaves out is mostly what no snapshot holds: jobs pushed
// later that go ahead, work that is not yet declared. So the late start is calibrated
// by how the queue's jobs started against theirs (split conformal prediction): each
// completed job asked about while it waited gives (started - asked) / (late - asked),
// and the late start answered is asked + (late - asked) x the kLateQuantile of those
// ratios, when it is above 1 (never narrower than the run's). Too few ratios
// (kMinCalibration): the run's late start as it is.
// The ratios come from the same last kOverrunsKept completed jobs as Overruns, from
// those told a late start at least kCalibrationMinWaitMs away: a job told it starts
// now says nothing of how long waits go wrong, and those are most jobs of a queue
// that is not saturated.
constexpr std::size_t kMinCalibration = 20;
constexpr std::int64_t kCalibrationMinWaitMs = 60000;
// A job's ratio: asked at `asked_ms`, told the run's late start `late_ms`, first started at `started_ms`.
std::optional<double> started_vs_late(std::int64_t asked_ms, std::int64_t late_ms, std::int64_t started_ms);
struct LateCalibration {
  std::vector<double> ratios;  // sorted
  static LateCalibration of(std::vector<double> ratios);
  // The late start to answer for one the run gave at `late_ms`, asked at `now_ms`.
  std::int64_t widen(std::int64_t now_ms, std::int64_t late_ms) const;
};

// The snapshot with each late end and late run time in place of the expected one.
Snapshot late_ends(const Snapshot& s);
// Whether any late value differs from the expected one (else the late run is the same run).
bool has_spread(const Snapshot& s);

// Runs placement forward until `target` (a job of s.waiting) is placed.
Estimate estimate_start(const Snapshot& s, const std::string& target);
// estimate_start with late_start_ms: a second run over late_ends(s) where the snapshot
// has spread (else the late start is the start); never before the start.
Estimate estimate_range(const Snapshot& s, const std::string& target);
// The first `limit` placements of the queue's waiting jobs, in start order, each with its
// late start where the snapshot has spread.
std::vector<Placement> forecast(const Snapshot& s, int limit);

// "3 running jobs' declared ends; 2 jobs ahead; the queue budget max_total_gpus"
std::string rests_on(const Estimate& e);
nlohmann::json to_json(const Estimate& e, std::int64_t now_ms);
nlohmann::json to_json(const Placement& p);

}  // namespace ojs::broker::estimate
