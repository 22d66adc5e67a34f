// Claims: the reads a claim's decision is made over (a snapshot), and the commit
// of what was decided (claim.lua); the decision itself is scheduling/'s
// (claim_decision.hpp). claim_gang.lua holds a worker as a member of a
// forming gang or delivers a started one (store/claim_store.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

// What a claim is decided over, read in one round trip: heads from the queue's
// class-head index (keys.hpp class_heads: each class with a waiting job, scored by
// its first job; a page of it, or the named classes), the queue's budget and use,
// whether it has tenant quotas, and whether it orders its jobs by fair share (then
// the heads' order is not the claim's). Possibly stale by the time it is used: the
// commit checks what must hold.
struct ClaimSnapshot {
  bool fair = false;
  bool tenant_quotas = false;
  BudgetUse budget;
  std::vector<std::pair<std::string, double>> heads;  // class id, its head's score; best first
  // When the queue's earliest scheduled job or retry is due (ms), if it has one: the
  // commit makes due ones available first, so a decision that found nothing commits
  // anyway once one is due.
  std::optional<std::int64_t> earliest_delayed_ms;
  std::int64_t now_ms = 0;  // Redis's clock when read: the one the commit and the due times use
  std::string classes_version = "0";  // the queue's class set as of the read (a newer one: refresh, then decide)
};

// A ready job past a class's head, for a decision that looks deeper (several jobs,
// tenant quotas, backfill).
struct ReadyJob {
  std::string id;
  double score = 0;
  std::string tenant;                                // read only when asked for
  std::optional<double> estimated_duration_s;        // read only when asked for
};

struct ReadyDetail {
  std::map<std::string, std::vector<ReadyJob>> jobs;  // class id -> its first jobs, in order
  TenantQuotaUse quotas;                              // read when asked for
};

// What a `fair` queue's claim is decided over (fair_candidates.lua): its
// fair_tenants layout, the tenants' use as last folded and held now, and per class
// the first jobs of each tenant slot its head's walk meets.
struct FairCandidate {
  int class_band = 0;  // 0 reserved, 1 on-demand, 2 spot; -1: scored under an earlier policy
  int slot = 0;
  std::string id;
  double score = 0;
  std::string tenant;
  std::optional<double> cpus;  // the job's CPU cores ("" = one)
  std::int64_t enqueued_ms = 0;  // when it became available (a locality hold's cutoff compares it)
};
// A fair queue's layout and its tenants' use as stored (the usage hash's two
// raw values per name: _lib_accounting.lua's layout), read without folding the
// journal: what ended attempts used stays counted in the held value until folded.
struct FairUsage {
  std::string layout_json;  // the config's fair_tenants ("" = none)
  std::string half_life_ms;  // the config's usage_half_life_ms ("" = the default)
  struct Usage {
    std::string name, decayed, held;  // '*' is the whole queue
  };
  std::vector<Usage> usage;
};
struct FairDetail : FairUsage {
  std::map<std::string, std::vector<FairCandidate>> classes;
  TenantQuotaUse quotas;  // read when the queue has tenant quotas
};

// One pick of a decided claim, as claim.lua commits it.
struct CommitPick {
  std::string class_id;
  std::string job_id;  // "" = the class's head when the commit runs
  std::int64_t hold_enqueued_after_ms = 0;  // not a job enqueued after this (0 = none)
  int gpus = 0;
  std::string devices_json;
  long long gpu_memory_mb = 0;
  int tpu_chips = 0;
};

// What a gang FETCH is decided over (gang_candidates.lua, read only):
// scheduling/gang_decision.cpp picks from it, claim_gang.lua commits the pick.
// Scores are ready-set scores: lower is earlier in the queue's order.
struct GangCandidates {
  std::int64_t now_ms = 0;  // Redis's clock when read
  struct Forming {  // the queue's forming gang (at most one holds members)
    std::string id, state, class_id;
    std::string workers_json;  // its held members' worker ids ("" = none)
    std::string first_label;   // its first member's value of the gang's same_label
    std::string gang_label;    // the gang's same_label ("" = none)
    std::optional<std::int64_t> expires_at;
    std::optional<double> score;  // its place in the queue's order (none: it left its ready set)
    std::string tenant;           // its job's tenant ("" = none)
  };
  std::optional<Forming> forming;
  struct Growing {  // a running elastic gang below its max_size (keys.hpp gangs_growing)
    std::string id, state, class_id;
    std::string workers_json;  // its members' worker ids by rank
    std::string first_label, gang_label;
    int max_size = 0;
    bool acked = false;  // a rank ACKed: it is finishing, not growing
    double score = 0;    // the ready score it started with
    std::string tenant;  // its job's tenant ("" = none)
  };
  std::vector<Growing> growing;  // best first
  struct Head {  // the head of an eligible gang class
    std::string class_id, job_id;
    double score = 0;
    std::optional<std::int64_t> expires_at, retry_at;  // retry_at: backing off after a hold timed out
    std::string gang_label;
    std::string tenant;  // its job's tenant ("" = none)
  };
  std::vector<Head> heads;  // the eligible classes with a waiting job, in their order
  std::string fair_layout_json;  // the config's fair_tenants under policy `fair` ("" = another policy)
};

// The gang a worker joins, as decided: the forming one, a head that starts
// forming, or a running elastic gang that grows (claim_gang.lua checks it still holds).
struct GangPick {
  enum class Kind { none, join, form, grow } kind = Kind::none;
  std::string job_id;
  const GangClass* cls = nullptr;  // the class as this worker may join it (its GPUs, devices, label)
  std::vector<std::string> expired;  // heads seen past their expires_at: the commit discards them
};

class ClaimStore {
 public:
  explicit ClaimStore(RedisPool& redis) : redis_(redis) {}

  // Commits decided picks (claim.lua): at most `count` of them are started, in order;
  // a pick whose job is gone, over the budget or a tenant's quota, or held for a warm
  // worker is skipped and named (budget and quota in budget_blocked, the others in
  // passed_over). record_held: each claimed job joins the worker's held set in the
  // queue (keys.hpp held), in the same script: a worker with capabilities has a load
  // to keep. fair: each started job joins its tenant's held use. promote_due: due
  // scheduled jobs and retries are made available first (false when the snapshot the
  // picks were decided on saw none due: the maintenance pass promotes what falls due since).
  ClaimOutcome commit(const std::string& queue, const std::string& worker_id, std::optional<std::int64_t> request_visibility_ms,
                      std::int64_t default_visibility_ms, int count, const std::string& classes_version,
                      const std::vector<CommitPick>& picks, bool record_held, bool fair = false, bool promote_due = true);

  // The snapshot with the heads from `offset` (0-based), at most `count`: one round trip.
  ClaimSnapshot class_heads(const std::string& queue, long long offset, long long count);
  // The same reads as commands another pipeline may carry (the worker's contact
  // does: a FETCH's first page costs no round trip of its own), and the snapshot
  // their replies give (replies[first...]).
  static std::vector<std::vector<std::string>> class_heads_reads(const std::string& queue, long long offset, long long count);
  static ClaimSnapshot class_heads_from(const std::vector<RedisValue>& replies, std::size_t first);
  // The snapshot with the heads of the named classes (those with a waiting job).
  ClaimSnapshot heads_of(const std::string& queue, const std::vector<std::string>& class_ids);
  // The first `depth` jobs of each named class; with_fields: their tenant and declared
  // duration too (a second round trip), and the tenants' quotas and use.
  ReadyDetail ready_detail(const std::string& queue, const std::vector<std::string>& class_ids, int depth, bool with_fields);
  // The fair order's candidates of the named classes (fair_candidates.lua,
  // read only), `depth` jobs per tenant slot, with the tenants' use as stored (no
  // fold: an end's use stays in its tenant's held value until the fold moves it);
  // with_quotas: the tenants' quotas and use.
  FairDetail fair_detail(const std::string& queue, const std::vector<std::string>& class_ids, int depth, bool with_quotas);

  // gang_candidates.lua: the forming gang and the eligible classes' heads.
  GangCandidates gang_candidates(const std::string& queue, const std::vector<GangClass>& eligible);
  // claim_gang.lua: deliver a started gang to a held member, or hold this
  // worker as the next member of the gang `pick` names (stale when it no longer can).
  GangClaim claim_gang(const std::string& queue, const GangMemberInfo& member, std::optional<std::int64_t> request_visibility_ms,
                       std::int64_t default_visibility_ms, const GangPick& pick);

 private:
  void read_claimed_jobs(const std::string& queue, ClaimOutcome& out);

  RedisPool& redis_;
};

}  // namespace ojs::broker
