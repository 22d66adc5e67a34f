// The Redis side of preemption, capacity holds, escalation and reservations:
// broker/preemption decides, this class acts (every write is one script or one
// command on one slot). Queue indexes (preempting, escalations, reservation
// waits) live in the queue's slot; holds, reservations and the controller lease
// are global keys (keys.hpp).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/store/claim_store.hpp"
#include "broker/store/guard_marks.hpp"
#include "broker/store/job_store.hpp"
#include "broker/store/redis_client.hpp"

namespace ojs::broker {

struct PreemptionMark {
  std::string job_id;
  int grace_period_s = 30;
  bool checkpoint = false;
};

class PreemptionStore {
 public:
  explicit PreemptionStore(RedisPool& redis) : redis_(redis) {}

  // A fair queue's layout and every tenant's use as stored, with Redis's
  // time of the read (one round trip; scheduling/fair_order.hpp fair_shares_at weighs
  // them), or nullopt when the queue's policy is not fair.
  struct FairUsageRead {
    FairUsage fair;
    std::int64_t now_ms = 0;
  };
  std::optional<FairUsageRead> fair_usage(const std::string& queue);

  // Leader lease of the preemption controller: true while `owner` holds it.
  bool hold_lease(const std::string& owner, std::int64_t ttl_ms);

  // Due entries (at most 100) of a queue's indexes, and their removal.
  enum class Index { preempting, escalations, reservation_waits };
  std::vector<std::string> due(const std::string& queue, Index index, std::int64_t now_ms);
  void drop(const std::string& queue, Index index, const std::string& id);

  // escalate.lua: re-bands a waiting job (compare-and-set on its rank base); false when skipped.
  // new_order_base: its fair order base in the new class (nullopt: keep its order).
  bool escalate(const JobRecord& job, double new_rank_base, std::optional<double> new_order_base, int from_rank, int to_rank);
  // discard_waiting.lua: a waiting job whose reservation never came is discarded with `error_json`.
  Transition discard_waiting(const JobRecord& job, const std::string& error_json);
  // preempt.lua: marks the victims (all on one worker, one queue), all or none;
  // id -> deadline ms, or nullopt when a victim changed meanwhile.
  std::optional<std::vector<std::pair<std::string, std::int64_t>>> mark(const std::string& queue,
                                                                        const std::string& preemptor,
                                                                        const std::string& worker_id,
                                                                        const std::vector<PreemptionMark>& victims);

  // The gang forming in the queue (it holds members), if any.
  std::optional<std::string> forming_gang(const std::string& queue);
  // The head (id, score) of a class's ready set.
  std::optional<std::pair<std::string, double>> ready_head(const std::string& queue, const std::string& class_id);

  // Capacity holds: worker id -> hold JSON.
  std::map<std::string, std::string> holds();
  std::optional<std::string> hold_of(const std::string& worker_id);
  void put_hold(const std::string& worker_id, const std::string& hold_json);
  void drop_hold(const std::string& worker_id);

  // The queue's backfill setting (config hash field `backfill`, JSON), if set.
  std::optional<std::string> backfill_setting(const std::string& queue);

  // Reservations: id -> JSON.
  std::map<std::string, std::string> reservations();
  bool has_reservations();
  void put_reservation(const std::string& id, const std::string& json);
  bool delete_reservation(const std::string& id);  // false when absent

 private:
  RedisPool& redis_;
};

}  // namespace ojs::broker
