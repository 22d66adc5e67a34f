#include "simulator/broker_queue.hpp"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "broker/governance/queue_configs.hpp"
#include "broker/scheduling/scheduler.hpp"
#include "broker/store/embedded_redis.hpp"
#include "broker/store/redis_client.hpp"
#include "ojs/ml/requirement_class.hpp"

namespace ojs::bench {

namespace {
const std::string kQueue = "sim";
}

struct BrokerQueue::Impl {
  std::string dir;
  std::unique_ptr<broker::EmbeddedRedis> redis;
  std::unique_ptr<broker::RedisPool> pool;
  std::unique_ptr<broker::JobStore> store;
  broker::governance::QueueConfig config;
  std::string version = "0";
};

BrokerQueue::BrokerQueue(const BrokerQueueOptions& options) : impl_(std::make_unique<Impl>()) {
  char tmpl[] = "/tmp/cluster-sim-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("cluster_sim: cannot create a temporary directory");
  impl_->dir = tmpl;
  impl_->redis = std::make_unique<broker::EmbeddedRedis>(options.redis_binary, impl_->dir);
  impl_->redis->start();
  impl_->pool = std::make_unique<broker::RedisPool>(broker::parse_redis_url(impl_->redis->url()), 1);
  impl_->store = std::make_unique<broker::JobStore>(*impl_->pool);
  // The queue configuration through the broker's own store: claim.lua reads what an admin PUT writes.
  impl_->config.policy = options.policy;
  impl_->config.tenant_fairness.weights = options.tenant_weights;
  // [usage] Decayed use is measured with Redis TIME, which is this process's real
  // time, not the simulated clock: the fair order here weighs what is held now only
  // (half-life 0), the part of the measure a simulation can reproduce.
  impl_->config.tenant_fairness.half_life_seconds = 0;
  broker::QueueConfigStore config_store(*impl_->pool);
  broker::governance::QueueConfigs(config_store).save(kQueue, impl_->config, std::nullopt);
}

BrokerQueue::~BrokerQueue() {
  if (impl_->redis) impl_->redis->stop();
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
  if (const auto& est = j.req.scheduling.estimated_duration_seconds)  // [backfill] as PUSH stores it (job_service.cpp)
    b.fields.emplace_back("estimated_duration_s", std::to_string(*est));
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
    auto out = impl_->store->claim(kQueue, worker, std::nullopt, 1LL << 40, 1, impl_->version, eligible, false);
    if (out.status == broker::TransitionStatus::stale) {  // a new class was pushed since
      impl_->version = out.current_version;
      continue;
    }
    if (out.jobs.empty()) return -1;
    return std::stoi(out.jobs[0].id());
  }
  throw std::runtime_error("cluster_sim: claim stayed stale");
}

void BrokerQueue::ack(int job, const std::string& worker) { impl_->store->ack(kQueue, std::to_string(job), "null", worker); }

void BrokerQueue::requeue(int job, const std::string& worker) {
  auto snapshot = impl_->store->get(kQueue, std::to_string(job));
  if (!snapshot) throw std::runtime_error("cluster_sim: preempted job vanished from the store");
  impl_->store->fail(*snapshot, "requeue", 0, "{\"code\":\"preempted\",\"message\":\"preempted\"}", "[]", false, worker);
}

}  // namespace ojs::bench
