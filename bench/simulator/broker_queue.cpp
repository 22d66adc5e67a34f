#include "simulator/broker_queue.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "broker/governance/queue_configs.hpp"
#include "broker/jobs/gang_rendezvous.hpp"
#include "broker/jobs/push_service.hpp"
#include "broker/scheduling/scheduler.hpp"
#include "broker/scheduling/claimer.hpp"
#include "broker/scheduling/fair_order.hpp"
#include "broker/store/claim_store.hpp"
#include "broker/store/embedded_redis.hpp"
#include "broker/store/gang_store.hpp"
#include "broker/store/keys.hpp"
#include "broker/store/preemption_store.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/redis_client.hpp"
#include "ojs/ml/requirement_class.hpp"

namespace ojs::bench {

struct BrokerQueue::Impl {
  std::string dir;
  std::unique_ptr<broker::EmbeddedRedis> redis;
  std::unique_ptr<broker::RedisPool> pool;
  std::unique_ptr<broker::JobStore> store;  // PUSH, ACK, FAIL
  std::unique_ptr<broker::ClaimStore> claims;
  std::unique_ptr<broker::JobReads> reads;
  std::unique_ptr<broker::GangStore> gangs;  // members leaving elastic gangs
  broker::governance::QueueConfig config;
  std::string version = "0";
  std::int64_t* clock_us = nullptr;  // the clock file, mapped shared with redis-server
  std::int64_t clock_at = -1;
};

namespace {
std::int64_t clock_us_of(double t) { return BrokerQueue::kEpochMs * 1000 + std::llround(t * 1e6); }
}  // namespace

std::int64_t BrokerQueue::redis_ms(double t) { return kEpochMs + std::llround(t * 1000); }

void BrokerQueue::advance(double t) {
  const auto us = clock_us_of(t);
  if (us <= impl_->clock_at) return;
  __atomic_store_n(impl_->clock_us, us, __ATOMIC_RELEASE);
  impl_->clock_at = us;
}

BrokerQueue::BrokerQueue(const BrokerQueueOptions& options) : impl_(std::make_unique<Impl>()) {
  char tmpl[] = "/tmp/cluster-sim-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("cluster_sim: cannot create a temporary directory");
  impl_->dir = tmpl;
  // The clock file redis-server's wall clock reads (sim_clock.c), at
  // simulated second 0 before it starts. The environment is inherited by the
  // redis-server child (and a restart of it by EmbeddedRedis's supervisor).
  if (::access(options.clock_library.c_str(), R_OK) != 0)
    throw std::runtime_error("cluster_sim: the simulated clock library " + options.clock_library +
                             " is missing (build the sim_clock target)");
  const std::string clock_path = impl_->dir + "/clock";
  const int fd = ::open(clock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ::ftruncate(fd, sizeof(std::int64_t)) != 0) throw std::runtime_error("cluster_sim: cannot create " + clock_path);
  void* map = ::mmap(nullptr, sizeof(std::int64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw std::runtime_error("cluster_sim: cannot map " + clock_path);
  impl_->clock_us = static_cast<std::int64_t*>(map);
  advance(0);
  ::setenv("OJS_SIM_CLOCK", clock_path.c_str(), 1);
  ::setenv("LD_PRELOAD", options.clock_library.c_str(), 1);
  impl_->redis = std::make_unique<broker::EmbeddedRedis>(options.redis_binary, impl_->dir);
  impl_->redis->start();
  impl_->pool = std::make_unique<broker::RedisPool>(broker::parse_redis_url(impl_->redis->url()), 1);
  impl_->store = std::make_unique<broker::JobStore>(*impl_->pool);
  impl_->claims = std::make_unique<broker::ClaimStore>(*impl_->pool);
  impl_->reads = std::make_unique<broker::JobReads>(*impl_->pool);
  impl_->gangs = std::make_unique<broker::GangStore>(*impl_->pool);
  // Fail loudly when redis-server did not take the clock (no preload: figures on wall time).
  const auto time = impl_->pool->command({"TIME"});
  if (time.elements.size() != 2 || std::stoll(time.elements[0].str) * 1000 != kEpochMs)
    throw std::runtime_error("cluster_sim: redis-server is not on the simulated clock (" + options.clock_library +
                             " not preloaded?)");
  // The queue configuration through the broker's own store: claim.lua reads what an admin PUT writes.
  impl_->config.policy = options.policy;
  impl_->config.tenant_fairness.weights = options.tenant_weights;
  // Decayed use is measured with Redis TIME: the simulated clock here.
  impl_->config.tenant_fairness.half_life_seconds = options.half_life_seconds;
  impl_->config.tenant_fairness.order = options.fair_order;
  broker::QueueConfigStore config_store(*impl_->pool);
  broker::governance::QueueConfigs(config_store).save(kQueue, impl_->config, std::nullopt);
}

BrokerQueue::~BrokerQueue() {
  if (impl_->redis) impl_->redis->stop();
  if (impl_->clock_us) ::munmap(impl_->clock_us, sizeof(std::int64_t));
  std::error_code ec;
  std::filesystem::remove_all(impl_->dir, ec);
}

void BrokerQueue::push(int job, const SimJob& j) {
  const auto cls = ml::requirement_class(j.req);
  const int class_rank = broker::priority_class_rank(j.req);
  broker::BatchJob b{kQueue, std::to_string(job), cls.id, cls.canonical, broker::rank_base(class_rank, j.priority),
                     std::nullopt, {}, std::nullopt, std::nullopt};
  b.fields = {{"queue", kQueue}, {"type", j.kind}, {"priority", std::to_string(j.priority)},
              {"gpus", std::to_string(j.req.gpu_count())}};
  if (!j.tenant.empty()) b.fields.emplace_back("tenant", j.tenant);
  if (const auto& est = j.req.scheduling.estimated_duration_seconds)  // as PUSH stores it (job_service.cpp)
    b.fields.emplace_back("estimated_duration_s", std::to_string(*est));
  for (auto& field : broker::gang_fields(j.req)) b.fields.push_back(std::move(field));
  const auto& c = impl_->config;
  if (c.policy != broker::QueuePolicy::priority)
    b.fields.emplace_back("order_base", broker::rank_text(broker::order_base(c.policy, class_rank, j.priority,
                                                                             j.req.scheduling.estimated_duration_seconds,
                                                                             c.tenant_fairness.slot_of(j.tenant))));
  impl_->store->push(b);
}

int BrokerQueue::claim(const std::string& worker, const std::vector<broker::EligibleClass>& eligible) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    // record_held false: the simulator keeps each worker's load itself (sim.cpp), not the registry.
    // The broker's own claim: decided by scheduling/claim_decision, committed by claim.lua.
    broker::Claimer claimer(*impl_->claims);
    auto out = claimer.claim({kQueue, worker, std::nullopt, 1LL << 40, 1, impl_->version, false}, eligible);
    if (out.status == broker::TransitionStatus::stale) {  // a new class was pushed since
      impl_->version = out.current_version;
      continue;
    }
    if (out.jobs.empty()) return -1;
    return std::stoi(out.jobs[0].id());
  }
  throw std::runtime_error("cluster_sim: claim stayed stale");
}

GangFetch BrokerQueue::claim_gang(const std::string& worker, const std::vector<broker::GangClass>& eligible, std::set<std::string> elastic,
                                  bool kept) {
  // The broker's own gang claim: decided by scheduling/gang_decision, committed by
  // claim_gang.lua. No rival: the simulated queue holds gangs only.
  broker::Claimer claimer(*impl_->claims);
  const auto out = claimer.claim_gang(
      {kQueue, {worker, worker, std::to_string(broker::kDefaultRendezvousPort)}, std::nullopt, 1LL << 40, std::move(elastic),
       [this] { return fair_shares(); }, kept},
      eligible);
  GangFetch fetch;
  switch (out.kind) {
    case broker::GangClaim::Kind::held:
    case broker::GangClaim::Kind::waiting:
      fetch.kind = GangFetch::Kind::held;
      fetch.job = std::stoi(out.job_id);
      fetch.rank = out.rank;
      break;
    case broker::GangClaim::Kind::start: {
      // What the member's FETCH reply tells it (gang_fetch.cpp's envelope).
      const auto members = nlohmann::json::parse(out.job.get("gang_members"), nullptr, false);
      const auto rendezvous = broker::gang_rendezvous(members, out.rank, out.job.get("gang_generation"));
      if (!rendezvous) throw std::runtime_error("cluster_sim: a started gang without this member's rank");
      fetch.kind = GangFetch::Kind::started;
      fetch.job = std::stoi(out.job.id());
      fetch.rank = out.rank;
      fetch.world_size = (*rendezvous)["ext_ml_gang_world_size"].get<int>();
      fetch.generation = (*rendezvous)["ext_ml_gang_generation"].dump();
      break;
    }
    default: break;
  }
  return fetch;
}

std::vector<int> BrokerQueue::ready_heads(const std::vector<std::string>& class_ids) {
  std::vector<std::vector<std::string>> reads;
  for (const auto& id : class_ids) reads.push_back({"ZRANGE", broker::keys::ready(kQueue, id), "0", "0"});
  std::vector<int> heads;
  if (reads.empty()) return heads;
  for (const auto& reply : impl_->pool->pipeline(reads)) heads.push_back(reply.elements.empty() ? -1 : std::stoi(reply.elements[0].str));
  return heads;
}

std::optional<broker::FairShares> BrokerQueue::fair_shares() { return broker::fair_shares_of(broker::PreemptionStore(*impl_->pool).fair_usage(kQueue), false); }

void BrokerQueue::ack(int job, const std::string& worker) { impl_->store->ack(kQueue, std::to_string(job), "null", worker); }

void BrokerQueue::requeue(int job, const std::string& worker) {
  auto snapshot = impl_->reads->get(kQueue, std::to_string(job));
  if (!snapshot) throw std::runtime_error("cluster_sim: preempted job vanished from the store");
  impl_->store->fail(*snapshot, "requeue", 0, "{\"code\":\"preempted\",\"message\":\"preempted\"}", "[]", false, worker);
}

bool BrokerQueue::mark_leaving(int job, const std::string& worker, int preemptor, int grace_period_s, bool checkpoint) {
  return impl_->gangs->mark_leaving(kQueue, std::to_string(job), worker, std::to_string(preemptor), grace_period_s, checkpoint)
      .deadline_ms.has_value();
}

int BrokerQueue::forming_gang() {
  const auto forming = broker::PreemptionStore(*impl_->pool).forming_gang(kQueue);
  return forming ? std::stoi(*forming) : -1;
}

int BrokerQueue::member_left(int job, const std::string& worker) {
  const auto running = impl_->gangs->member_left(kQueue, std::to_string(job), worker);
  if (!running) throw std::runtime_error("cluster_sim: a member told to leave gang " + std::to_string(job) + " was not leaving");
  const auto members = nlohmann::json::parse(running->get("gang_workers"), nullptr, false);
  return members.is_array() ? static_cast<int>(members.size()) : 0;
}

}  // namespace ojs::bench
