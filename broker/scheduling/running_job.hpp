// One job active on a worker, as preemption sees it: what the victim choice, the
// backfill plan and the forecast weigh, and what a capacity hold records of each
// victim (job id, GPUs, devices) for the FETCH guards. Below broker/preemption so
// the guards can read a hold without depending on it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ojs/ml/predicates.hpp"
#include "ojs/ml/requirements.hpp"

namespace ojs::broker {

struct RunningJob {
  std::string job_id;
  std::string queue;
  std::string worker_id;
  std::string tenant;        // its meta.tenant_id ("" none): the tenant order's share rule
  int class_rank = 1;        // spot 0, on-demand 1, reserved 2
  bool preemptible = false;  // ext_ml_preemptible (defaults from the class)
  bool preempting = false;   // already marked: it is on its way out
  int gpus = 0;
  int borrowed_gpus = 0;     // of them, charged above its queue's nominal share (a cohort's borrowing)
  std::vector<ml::AffinityRule> anti_affinity;  // its own required anti-affinity (symmetric: it refuses newcomers)
  std::optional<double> gpu_memory_gb;          // declared per device (a shared device's share otherwise)
  int cpu_cores = 0;                            // host resources declared (ml::JobDemand)
  double memory_gb = 0;
  int tpu_chips = 0;          // on its worker; among a queue's charged jobs, the chips charged (charged_tpu_chips)
  long long gpu_mem_mb = 0;  // GPU memory charged to its queue's budget (charged_gpu_mem_mb)
  std::vector<int> devices;
  ml::Labels labels;          // anti-affinity labels
  std::int64_t lost_ms = 0;   // progress lost if preempted now: since its last checkpoint (or start)
  bool young = false;         // has run less than its ext_ml_min_runtime_before_preempt_s: chosen only if nothing else does
  std::int64_t young_until_ms = 0;  // when it stops being young (0: never was): a forecast's later instants move `young`
  int grace_period_s = 30;     // ext_ml_preemption_grace_period_s
  bool checkpoint_on_preempt = false;
  std::optional<std::int64_t> declared_end_ms;  // what backfill plans by: started + estimate, or its execution deadline
  // A member of a running elastic gang above its minimum (never rank 0, the
  // rendezvous): preempting it makes only this member leave and the gang shrinks.
  // gang_spare: how many of the gang's members may still leave (members - leaving -
  // min_size), shared by every member of the gang.
  bool leaves = false;
  int gang_spare = 0;
  // Any member of a running elastic gang (rank 0 and a leaving one too): its members
  // less those leaving, and its min_size; 0 when not an elastic gang. What an equal
  // gang's share is weighed against (elastic_share_shrink.hpp).
  int gang_now = 0;
  int gang_min = 0;
};

}  // namespace ojs::broker
