// FETCH: the classes a worker may take from each queue (the scheduling pipeline),
// then the claim; gang classes through claim_gang (gang_fetch.cpp).
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <mutex>
#include <string>
#include <vector>

#include "broker/config.hpp"
#include "broker/jobs/fetch_request.hpp"
#include "broker/jobs/job_service.hpp"
#include "broker/pools/pool_fetch_order.hpp"
#include "broker/scheduling/claimer.hpp"
#include "broker/scheduling/diagnosis_log.hpp"
#include "broker/scheduling/scheduler.hpp"
#include "broker/store/claim_store.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/preemption_store.hpp"
#include "broker/store/queue_directory.hpp"
#include "broker/workers/worker_registry.hpp"

namespace ojs::broker {

// Whether a class is an ext_ml_gang class (claimed by claim_gang, never by claim).
bool is_gang_class(const Scheduler& scheduler, const ClassSet& classes, const std::string& class_id);
// A started gang's job as one member receives it: rank, world size, rendezvous, its devices.
nlohmann::json gang_envelope(const JobRecord& job, int rank);

class FetchService {
 public:
  // jobs: hands back a claimed job a running job's anti-affinity excludes (a NACK with requeue).
  FetchService(ClaimStore& claims, QueueDirectory& queues, JobReads& reads, PreemptionStore& marks, JobService& jobs,
               Scheduler& scheduler, WorkerRegistry& workers, DiagnosisLog& diagnosis, const BrokerConfig& config)
      : claims_(claims), claimer_(claims), queues_(queues), reads_(reads), marks_(marks), jobs_(jobs), scheduler_(scheduler),
        workers_(workers), diagnosis_(diagnosis), config_(config) {}

  // A FETCH: the worker's contact first (WorkerRegistry::contact, one round trip: its
  // directive state, what it holds, its capacity-guard marks), the one read of them a
  // FETCH makes; then, for a running worker, the claims.
  struct Outcome {
    std::string state;                           // what the worker is told: running, quiet or terminate
    std::vector<std::string> jobs;               // claimed, each job's envelope as JSON text (none unless running)
    std::vector<PreemptionMarkView> preempting;  // its jobs marked for preemption (the reply's job_directives)
    std::map<std::string, int> dispatched;       // queue -> jobs claimed from it (the dispatch metric)
    std::vector<std::string> gang_jobs;          // the jobs it held at its contact as a gang member (the reply's gangs)
  };
  // incarnation: which run of the worker process this is (WorkerRegistry::contact).
  Outcome fetch(const FetchRequest& request, const std::string& incarnation);
  // A FETCH naming a pool takes its queues and their order from it (none wired: 404 for any pool).
  void set_pools(pools::PoolFetchOrder* pools) { pools_ = pools; }

 private:
  // Symmetric anti-affinity on the claimed job itself: true when it was handed back.
  bool excluded_by_running_job(const JobRecord& record, const ml::WorkerLoad& load);
  // The claim snapshot's first page, read in the worker's contact pipeline (no round
  // trip of its own): every head when the queue has few classes (then it also stands
  // for the claim's own read of the eligible heads), else the walk's first page.
  struct FirstPage {
    ClaimSnapshot snapshot;
    long long count = 0;    // heads asked for
    bool complete = false;  // it holds every head of the queue
  };
  static constexpr long long kWalkFirstPage = 4;
  static constexpr std::size_t kWholeIndexClasses = 16;
  // Claims from one queue for a worker until `jobs` holds `until`; appends envelopes
  // (JSON text). first_page: the snapshot read with the contact, for the first round.
  void fetch_from_queue(const std::string& queue, const FetchRequest& request, WorkerView& worker,
                        std::vector<std::string>& jobs, int until, std::optional<FirstPage> first_page = std::nullopt);
  // A pool's FETCH: the queues in its strategy's order, one job from each per pass
  // (an interleave, as round-robin and weighted ask), within the pool's concurrency.
  void fetch_from_pool(const pools::PoolFetchOrder::Plan& plan, const FetchRequest& request, WorkerView& worker,
                       Outcome& out);
  // A queue's classes as FETCH keeps them (validated by the claim script's version
  // check), with its gang classes apart: judged once per version, not per FETCH.
  struct KeptClasses {
    ClassSet all;
    ClassSet gangs;
  };
  std::shared_ptr<const KeptClasses> classes_of(const std::string& queue, bool refresh);
  // gang classes of the queue through claim_gang (broker/jobs/gang_fetch.cpp).
  void fetch_gang(const std::string& queue, const KeptClasses& kept, const FetchRequest& request, WorkerView& worker,
                  std::vector<std::string>& jobs);
  // The score of the first waiting job of the queue's other classes that this worker
  // could take (none: none it could): what an elastic gang must be ahead of to grow.
  std::optional<double> first_plain_job(const std::string& queue, const KeptClasses& kept, const WorkerView& worker);
  // The verdicts of the classes the claim is offered, judged in the order of their
  // heads (the class-head index) and only as far as one of them may win: the first
  // eligible class at the bonus bound, or the end of the best eligible head's band
  // (the claim's own order). False, with nothing judged, when the queue's order is
  // not the heads' (policy fair): then every class is judged. `snapshot` gathers what
  // the walk read (the heads, the budget): the claim is decided over it.
  bool walk_classes(const std::string& queue, const KeptClasses& kept, const WorkerView& worker,
                    const std::set<std::string>& skip, std::vector<ClassVerdict>& out, ClaimSnapshot& snapshot,
                    std::optional<FirstPage> first_page);
  // Whether this worker's FETCH from this queue judges every class (its diagnosis
  // records kept fresh at DiagnosisLog's refresh period) instead of walking the heads.
  bool full_judgement_due(const std::string& queue, const std::string& worker_id);

  ClaimStore& claims_;
  Claimer claimer_;
  QueueDirectory& queues_;
  JobReads& reads_;
  PreemptionStore& marks_;
  JobService& jobs_;
  Scheduler& scheduler_;
  WorkerRegistry& workers_;
  DiagnosisLog& diagnosis_;
  const BrokerConfig& config_;
  pools::PoolFetchOrder* pools_ = nullptr;
  std::mutex classes_mutex_;
  std::map<std::string, std::shared_ptr<const KeptClasses>> classes_cache_;  // per queue
  std::mutex full_mutex_;
  std::unordered_map<std::string, std::int64_t> last_full_judgement_;  // queue \n worker -> ms
};

}  // namespace ojs::broker
