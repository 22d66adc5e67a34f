#include "broker/app.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "broker/access_and_governance.hpp"
#include "broker/admin/job_listing.hpp"
#include "broker/admin/stats_history.hpp"
#include "broker/admin/usage.hpp"
#include "broker/api/api.hpp"
#include "broker/api/preemption_api.hpp"
#include "broker/api/pools_api.hpp"
#include "broker/api/schemas_api.hpp"
#include "broker/api/webhooks_api.hpp"
#include "broker/background/maintenance.hpp"
#include "broker/cron/cron_service.hpp"
#include "broker/estimate/estimate_service.hpp"
#include "broker/events/event_hub.hpp"
#include "broker/events/event_log.hpp"
#include "broker/jobs/job_control.hpp"
#include "broker/logs/log_service.hpp"
#include "broker/http/cors.hpp"
#include "broker/http/server.hpp"
#include "broker/observability/observability.hpp"
#include "broker/preemption/preemption.hpp"
#include "broker/store/claim_store.hpp"
#include "broker/store/gang_store.hpp"
#include "broker/store/dead_letter_store.hpp"
#include "broker/store/embedded_redis.hpp"
#include "broker/store/job_directory.hpp"
#include "broker/store/job_index_store.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/preemption_store.hpp"
#include "broker/store/cohort_store.hpp"
#include "broker/store/queue_directory.hpp"
#include "broker/store/redis_health.hpp"
#include "broker/store/stats_history_store.hpp"
#include "broker/store/upkeep_store.hpp"
#include "broker/store/usage_store.hpp"
#include "broker/store/progress_store.hpp"
#include "broker/store/idempotency_store.hpp"
#include "broker/store/unique_store.hpp"
#include "broker/store/workflow_store.hpp"
#include "broker/store/cron_store.hpp"
#include "broker/store/legacy_keys.hpp"
#include "broker/store/pool_store.hpp"
#include "broker/store/schema_store.hpp"
#include "broker/store/webhook_store.hpp"
#include "broker/pools/pool_fetch_order.hpp"
#include "broker/pools/pool_service.hpp"
#include "broker/pools/scheduling_stats.hpp"
#include "broker/schemas/args_check.hpp"
#include "broker/schemas/schema_registry.hpp"
#include "broker/webhooks/dispatcher.hpp"
#include "broker/webhooks/webhook_service.hpp"
#include "broker/workflows/workflow_service.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

struct BrokerApp::Impl {
  BrokerConfig config;
  CronLimits cron_limits;
  webhooks::WebhookSettings webhook_settings;
  std::unique_ptr<EmbeddedRedis> embedded;
  std::unique_ptr<RedisPool> redis;
  // The stores, one per thing owned (docs/architecture.md "Wiring"): each service
  // below gets the ones it uses, never another's.
  struct Stores {
    explicit Stores(RedisPool& redis)
        : transitions(redis), directory(redis), reads(redis), queues(redis), claims(redis), dead(redis), upkeep(redis),
          health(redis), marks(redis), index(redis), history(redis), usage(redis), progress(redis), unique(redis),
          idempotency(redis), workflows(redis), cohorts(redis), gangs(redis) {}
    JobStore transitions;  // PUSH, ACK, FAIL, CANCEL, BEAT, checkpoints
    JobDirectory directory;
    JobReads reads;
    QueueDirectory queues;
    ClaimStore claims;
    DeadLetterStore dead;
    UpkeepStore upkeep;
    RedisHealth health;
    PreemptionStore marks;
    JobIndexStore index;
    StatsHistoryStore history;
    UsageStore usage;
    ProgressStore progress;
    UniqueStore unique;
    IdempotencyStore idempotency;  // PUSH's Idempotency-Key records
    WorkflowStore workflows;
    CohortStore cohorts;  // cohort members' settings and shares (the preemption controller's pass)
    GangStore gangs;      // running gangs as their members see them (the heartbeat reply)
  };
  std::unique_ptr<Stores> stores;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<DiagnosisLog> diagnosis;
  std::unique_ptr<EstimateService> estimates;
  std::unique_ptr<JobService> jobs;
  std::unique_ptr<PushService> push;
  std::unique_ptr<FetchService> fetch;
  std::unique_ptr<JobViews> views;
  std::unique_ptr<Reaper> reaper;
  // What the admin pages, batch and unique PUSH and progress use (each its own).
  std::unique_ptr<admin::JobListingSources> listing;
  std::unique_ptr<admin::DeadLetterSources> dead_letter;
  std::unique_ptr<admin::BulkSources> bulk;
  std::unique_ptr<admin::HistorySources> history;
  std::unique_ptr<admin::UsageSources> usage;
  std::unique_ptr<admin::TenantScanSources> tenants;
  std::unique_ptr<admin::Sources> admin;
  std::unique_ptr<BatchPushSources> batch;
  std::unique_ptr<UniquePushSources> unique;
  std::unique_ptr<ProgressSources> progress;
  std::unique_ptr<WorkerStore> worker_store;
  std::unique_ptr<WorkerRegistry> workers;
  // The services the API calls beside JobService (api/ never names a store).
  std::unique_ptr<QueueService> queues;
  std::unique_ptr<JobControlStore> job_control_store;
  std::unique_ptr<JobControl> job_control;  // hold, release, update
  std::shared_ptr<StreamSlots> stream_slots;
  std::unique_ptr<LogStore> log_store;
  std::unique_ptr<LogService> logs;  // job logs and their follows
  std::unique_ptr<obs::Observability> observability;
  std::unique_ptr<EventLog> event_log;
  std::unique_ptr<Checkpoints> checkpoints;
  std::unique_ptr<Reservations> reservations;
  std::unique_ptr<ApiContext> api;
  Router router;
  std::unique_ptr<CorsPolicy> cors;  // --cors-origin: browser dashboards on other origins
  DrainGate drain;                   // graceful shutdown: no new work while in-flight requests finish
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<Maintenance> maintenance;
  std::unique_ptr<PreemptionController> preemption;
  std::unique_ptr<CronService> cron;  // ecosystem: cron registrations and ticker
  std::unique_ptr<WorkflowService> workflows;  // OJS level 3: chain, group, batch
  std::unique_ptr<governance::Installed> governance;  // access control, admission, admin queue routes
  std::unique_ptr<EventStore> events;
  std::unique_ptr<EventHub> event_hub;  // the SSE fan-out

  // start(), step by step: the Redis connection (an embedded server without
  // --redis-url), the stores and the services the API calls, the routes of every
  // module with the services only they use, the HTTP server's options, and the
  // background loop's steps.
  void connect_redis();
  void build_services();
  void build_api();
  void build_webhooks();
  void build_schemas();
  void build_pools();
  HttpServerOptions server_options() const;
  void start_background();
  std::unique_ptr<WebhookStore> webhook_store;
  std::unique_ptr<webhooks::Dispatcher> webhook_dispatcher;  // fed by the hub's reader
  std::unique_ptr<webhooks::WebhookService> webhooks;
  std::unique_ptr<SchemaStore> schema_store;
  std::unique_ptr<schemas::ArgsCheck> args_check;  // PUSH's check, fed by the registry's changes
  std::unique_ptr<schemas::SchemaRegistry> schemas;
  std::unique_ptr<PoolStore> pool_store;
  std::unique_ptr<pools::PoolFetchOrder> pool_order;  // FETCH's queue order for a worker naming its pool
  std::unique_ptr<pools::PoolService> pools;
  std::unique_ptr<pools::SchedulingStats> scheduling_stats;
};

BrokerApp::BrokerApp(BrokerConfig config, CronLimits crons, webhooks::WebhookSettings hooks) : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  impl_->cron_limits = crons;
  impl_->webhook_settings = hooks;
}

BrokerApp::~BrokerApp() { stop(); }

void BrokerApp::start() {
  auto& i = *impl_;
  i.connect_redis();
  i.build_services();
  i.build_api();
  i.server = std::make_unique<HttpServer>(i.server_options(), i.router);
  i.server->start();
  i.webhook_dispatcher->start();  // before the hub: it asks whether to read for it
  i.event_hub->start();
  i.logs->start();
  i.start_background();
  spdlog::info("broker listening on {}://{}:{} (Redis {})", i.config.tls_cert.empty() ? "http" : "https", i.config.listen_address, i.server->port(),
               i.redis->endpoint().describe());
}

void BrokerApp::Impl::connect_redis() {
  auto& i = *this;
  std::string url = i.config.redis_url;
  if (url.empty()) {
    i.embedded = std::make_unique<EmbeddedRedis>(i.config.redis_server_binary, i.config.data_dir);
    i.embedded->start();
    url = i.embedded->url();
  }
  // One idle connection per handler thread, plus the background loop's.
  auto endpoint = parse_redis_url(url);
  endpoint.replica_wait = {i.config.redis_replica_acks, i.config.redis_replica_wait_ms};
  i.redis = std::make_unique<RedisPool>(std::move(endpoint), static_cast<std::size_t>(i.config.handler_threads) + 2);
  if (!i.redis->ping())
    spdlog::warn("Redis at {} is not reachable yet; requests get 503 until it is (the pre-cluster key migration runs at the next start)",
                 i.redis->endpoint().describe());
  else if (i.redis->endpoint().cluster_seeds.empty())
    migrate_legacy_global_keys(*i.redis);  // before anything reads the global keys
  // Every write would be refused (503) while fewer replicas than asked for are connected.
  if (i.config.redis_replica_acks > 0 && i.redis->endpoint().cluster_seeds.empty())
    if (const auto replicas = RedisHealth(*i.redis).connected_replicas(); replicas && *replicas < i.config.redis_replica_acks)
      spdlog::warn("--redis-replica-acks {} but {} has {} replica(s) connected: every write answers 503 until enough replicas are",
                   i.config.redis_replica_acks, i.redis->endpoint().describe(), *replicas);
}

void BrokerApp::Impl::build_services() {
  auto& i = *this;
  i.stores = std::make_unique<Impl::Stores>(*i.redis);
  auto& st = *i.stores;
  SchedulerOptions scheduling;
  scheduling.locality_delay_ms = i.config.locality_delay_ms;
  scheduling.assignment.policy = i.config.placement == "spread" ? ml::PlacementPolicy::spread : ml::PlacementPolicy::pack;
  i.scheduler = std::make_unique<Scheduler>(scheduling);
  i.diagnosis = std::make_unique<DiagnosisLog>(DiagnosisStore(*i.redis));
  i.worker_store = std::make_unique<WorkerStore>(*i.redis);
  i.workers = std::make_unique<WorkerRegistry>(*i.worker_store);
  i.workers->set_cordon_share(i.config.cordon_unhealthy_share);
  i.jobs = std::make_unique<JobService>(st.transitions, st.directory, st.reads, st.workflows, st.gangs);
  i.push = std::make_unique<PushService>(st.transitions, st.directory, st.queues, *i.scheduler, i.config);
  i.fetch = std::make_unique<FetchService>(st.claims, st.queues, st.reads, st.marks, *i.jobs, *i.scheduler, *i.workers,
                                           *i.diagnosis, i.config);
  i.views = std::make_unique<JobViews>(st.reads, st.queues, st.marks, st.cohorts, *i.diagnosis, *i.workers, i.config);
  i.reaper = std::make_unique<Reaper>(st.reads, st.transitions, st.workflows);
  i.queues = std::make_unique<QueueService>(st.queues, *i.push);
  i.observability =
      std::make_unique<obs::Observability>(obs::OverviewSources{i.config, *i.views, st.queues, *i.workers, st.health, st.usage});
  i.estimates = std::make_unique<EstimateService>(st.reads, st.queues, EstimateStore(*i.redis), QueueConfigStore(*i.redis), st.marks,
                                                  *i.scheduler, *i.workers, i.config);
  i.listing = std::make_unique<admin::JobListingSources>(admin::JobListingSources{st.index, st.queues, st.reads});
  i.dead_letter = std::make_unique<admin::DeadLetterSources>(admin::DeadLetterSources{st.dead, st.directory, st.queues, st.index});
  i.bulk = std::make_unique<admin::BulkSources>(admin::BulkSources{*i.listing, *i.jobs, st.dead, st.directory});
  i.history = std::make_unique<admin::HistorySources>(admin::HistorySources{st.history, st.queues});
  i.usage = std::make_unique<admin::UsageSources>(admin::UsageSources{st.usage, st.queues});
  i.tenants = std::make_unique<admin::TenantScanSources>(admin::TenantScanSources{st.index, st.queues});
  i.admin = std::make_unique<admin::Sources>(admin::Sources{*i.listing, *i.dead_letter, *i.bulk, *i.history, *i.usage, *i.tenants});
  i.batch = std::make_unique<BatchPushSources>(BatchPushSources{*i.push, st.queues, st.transitions});
  i.unique = std::make_unique<UniquePushSources>(UniquePushSources{*i.push, st.unique, st.idempotency});
  i.progress = std::make_unique<ProgressSources>(ProgressSources{st.directory, st.reads, st.progress});
  i.api = std::make_unique<ApiContext>(ApiContext{i.config, *i.jobs, *i.push, *i.fetch, *i.views, *i.reaper, *i.queues, *i.workers,
                                                  *i.batch, *i.unique, *i.progress, *i.admin, std::chrono::steady_clock::now(),
                                                  i.drain, i.estimates.get()});
}

void BrokerApp::Impl::build_api() {
  auto& i = *this;
  auto& st = *i.stores;
  register_system_api(i.router, *i.api, *i.observability);
  register_jobs_api(i.router, *i.api);
  register_batch_api(i.router, *i.api);
  register_estimate_api(i.router, *i.api, *i.estimates);
  i.job_control_store = std::make_unique<JobControlStore>(*i.redis);
  i.job_control = std::make_unique<JobControl>(*i.jobs, *i.push, st.reads, *i.job_control_store);
  register_job_control_api(i.router, *i.api, *i.job_control);
  i.log_store = std::make_unique<LogStore>(*i.redis);
  LogOptions log_options;
  log_options.max_bytes = i.config.job_log_max_bytes;
  // Event streams and log follows count against one --max-event-streams.
  i.stream_slots = std::make_shared<StreamSlots>(static_cast<std::size_t>(i.config.max_event_streams));
  log_options.slots = i.stream_slots;
  log_options.keep_alive = std::chrono::milliseconds(i.config.event_stream_keepalive_ms);
  i.logs = std::make_unique<LogService>(*i.jobs, *i.log_store, log_options);
  register_logs_api(i.router, *i.api, *i.logs);
  i.cron = std::make_unique<CronService>(*i.push, *i.jobs, CronStore(*i.redis), i.config.maintenance_interval_ms, i.cron_limits);
  register_cron_api(i.router, *i.cron);
  i.workflows = std::make_unique<WorkflowService>(*i.push, st.workflows, st.reads, st.queues);
  register_workflows_api(i.router, *i.workflows);
  register_progress_api(i.router, *i.api);
  register_workers_api(i.router, *i.api);
  i.events = std::make_unique<EventStore>(*i.redis);
  EventHubOptions streams;
  streams.max_streams = static_cast<std::size_t>(i.config.max_event_streams);
  streams.slots = i.stream_slots;
  streams.keep_alive = std::chrono::milliseconds(i.config.event_stream_keepalive_ms);
  streams.poll = std::chrono::milliseconds(i.config.event_stream_poll_ms);
  i.event_hub = std::make_unique<EventHub>(*i.events, streams);
  i.event_log = std::make_unique<EventLog>(*i.events);
  register_events_api(i.router, *i.api, *i.event_log, *i.event_hub);
  i.build_webhooks();
  i.build_schemas();
  i.build_pools();
  register_dead_letter_api(i.router, *i.api);
  i.governance = governance::install(i.config, *i.redis, *i.push, i.router, *i.api);
  register_push_api(i.router, *i.api, *i.governance->configs);
  register_queues_api(i.router, *i.api, *i.governance->configs);
  register_rate_limits_api(i.router, *i.api, *i.governance->configs);
  register_admin_api(i.router, *i.api, *i.governance->configs);
  // Cron ticks are PUSHes of the identity that registered the cron: --push-rate binds them.
  i.cron->set_tick_admission([access = i.governance->access.get()](const std::string& identity) { return access->take_push_token(identity); });
  register_tenants_api(i.router, *i.api, *i.governance->configs);
  i.router.use([d = &i.drain](const HttpRequest& r, const std::string& route) { d->check(r, route); });  // after access control
  i.drain.watch(i.router);
  i.checkpoints = std::make_unique<Checkpoints>(st.reads, st.transitions, i.config.checkpoint_prefixes);
  i.reservations = std::make_unique<Reservations>(st.marks);
  register_preemption_api(i.router, *i.checkpoints, *i.reservations);
  register_observability_api(i.router, *i.observability);

  // Reads whose cost grows with the data: a bounded share of the handler threads, so
  // health, readiness, FETCH and the other calls never wait behind them.
  i.router.bound_share({"GET /ojs/v1/jobs/{id}/diagnosis", "GET /ojs/v1/queues/{name}/diagnosis",
                        "POST /ojs/v1/jobs/{id}/what-if", "GET /ojs/v1/queues/{name}/forecast", "GET /ojs/v1/jobs/{id}/logs",
                        "GET /ojs/v1/admin/jobs", "GET /ojs/v1/admin/queues/{name}/jobs", "GET /ojs/v1/dead-letter",
                        "GET /ojs/v1/admin/dead-letter", "GET /ojs/v1/admin/usage", "GET /ojs/v1/admin/tenants",
                        "GET /ojs/v1/admin/tenants/{id}", "GET /ojs/v1/admin/tenants/{id}/stats", "GET /ojs/v1/admin/workers", "GET /ojs/v1/workflows", "GET /ojs/v1/events",
                        "GET /ojs/v1/admin/pools", "GET /ojs/v1/admin/scheduling/stats"},
                       i.config.expensive_reads > 0 ? i.config.expensive_reads : std::max(1, i.config.handler_threads / 4));

  i.cors = std::make_unique<CorsPolicy>(i.config.cors_origins);
  if (i.cors->enabled()) i.router.decorate([c = i.cors.get()](const HttpRequest& r, HttpResponse& response) { c->decorate(r, response); });
}

// The schema registry and PUSH's check of args against it.
void BrokerApp::Impl::build_schemas() {
  auto& i = *this;
  i.schema_store = std::make_unique<SchemaStore>(*i.redis);
  i.args_check = std::make_unique<schemas::ArgsCheck>(*i.schema_store, i.config.schema_validation);
  i.schemas = std::make_unique<schemas::SchemaRegistry>(*i.schema_store, *i.args_check);
  if (i.config.schema_validation != "off")
    i.push->set_args_check([c = i.args_check.get()](const NewJob& job, const std::string& tenant) { return c->check(job, tenant); });
  register_schemas_api(i.router, *i.schemas);
}

// Worker pools: their admin API, the queue order of a FETCH that names one, the scheduling stats.
void BrokerApp::Impl::build_pools() {
  auto& i = *this;
  i.pool_store = std::make_unique<PoolStore>(*i.redis);
  i.pool_order = std::make_unique<pools::PoolFetchOrder>(*i.pool_store);
  i.fetch->set_pools(i.pool_order.get());
  i.pools = std::make_unique<pools::PoolService>(*i.pool_store, *i.workers, i.config.worker_dead_after_ms);
  i.scheduling_stats = std::make_unique<pools::SchedulingStats>(*i.pool_store, i.stores->queues);
  register_pools_api(i.router, *i.pools, *i.scheduling_stats);
}

// Webhook subscriptions and their delivery, fed by the event hub's reader.
void BrokerApp::Impl::build_webhooks() {
  auto& i = *this;
  i.webhook_store = std::make_unique<WebhookStore>(*i.redis);
  const auto& hooks = i.webhook_settings;
  webhooks::DispatchOptions delivery;
  delivery.allow_private = hooks.allow_private;
  delivery.queue_size = hooks.queue_size;
  delivery.threads = hooks.threads;
  delivery.max_attempts = hooks.max_attempts;
  delivery.retry_base = std::chrono::milliseconds(hooks.retry_base_ms);
  delivery.timeout = std::chrono::milliseconds(hooks.timeout_ms);
  delivery.log_size = hooks.log_size;
  i.webhook_dispatcher = std::make_unique<webhooks::Dispatcher>(*i.webhook_store, delivery);
  i.event_hub->set_sink([d = i.webhook_dispatcher.get()] { return d->wanted(); },
                        [d = i.webhook_dispatcher.get()](const std::string& key, const nlohmann::json& event) { d->offer(key, event); });
  i.webhooks = std::make_unique<webhooks::WebhookService>(
      *i.webhook_store, *i.webhook_dispatcher,
      webhooks::ServiceOptions{hooks.allow_private, hooks.max_subscriptions});
  register_webhooks_api(i.router, *i.api, *i.webhooks);
}

HttpServerOptions BrokerApp::Impl::server_options() const {
  const auto& i = *this;
  HttpServerOptions http;
  http.address = i.config.listen_address;
  http.port = i.config.port;
  // Each I/O thread runs the hot requests to completion: more threads than cores
  // only adds switches between them (on 2 cores, 4 threads cost 587 us of broker CPU
  // per FETCH+ACK job, 1 thread 323 us: docs/benchmarks.md). Redis wants a core too.
  http.threads = i.config.http_threads > 0
                     ? i.config.http_threads
                     : static_cast<int>(std::clamp(std::thread::hardware_concurrency() / 2, 1u, 8u));
  http.handler_threads = i.config.handler_threads;
  // A cluster's router blocks (its retries and failover): its requests stay on the pool.
  http.fibers_on_io_threads = i.config.io_thread_handlers && i.redis->endpoint().cluster_seeds.empty();
  http.max_body_bytes = i.config.max_body_bytes;
  http.header_timeout = std::chrono::milliseconds(i.config.http_header_timeout_ms);
  http.body_timeout = std::chrono::milliseconds(i.config.http_body_timeout_ms);
  http.idle_timeout = std::chrono::milliseconds(i.config.http_idle_timeout_ms);
  http.max_connections = i.config.max_connections;
  http.tls_cert = i.config.tls_cert;
  http.tls_key = i.config.tls_key;
  return http;
}

void BrokerApp::Impl::start_background() {
  auto& i = *this;
  auto& st = *i.stores;
  i.maintenance = std::make_unique<Maintenance>(st.queues, st.upkeep, *i.reaper, *i.workers, i.config);
  i.preemption = std::make_unique<PreemptionController>(
      st.reads, st.queues, st.marks, st.cohorts, [jobs = i.jobs.get()](const std::string& id, const nlohmann::json& error) { jobs->fail(id, error, /*requeue=*/true); },
      *i.scheduler, *i.diagnosis, *i.workers, st.gangs, i.config);
  i.maintenance->add_step([p = i.preemption.get()] { p->run_once(); });
  i.maintenance->add_step([c = i.cron.get()] { c->run_once(); });
  i.maintenance->add_step([w = i.workflows.get()] { w->run_once(); });  // batch callbacks left due
  // About once a second: the ends journaled since (reads settle what they read
  // themselves; this keeps the journals short: one LLEN per queue finds the ones to settle).
  i.maintenance->add_step_every(1000, [usage = i.usage.get()] { admin::settle_ends(*usage); });
  // About once a minute: the finished index to each queue's retention, the
  // stats rollup to the day kept, the usage rollup to --usage-retention-hours.
  i.maintenance->add_step_every(60000, [admin = i.admin.get(), configs = i.governance->configs.get(), &config = i.config] {
    admin::trim_finished(admin->listing, [configs, &config](const std::string& queue) {
      return admin::retention_for(configs->load(queue).retention, config);
    });
    admin::trim_stats_history(admin->history);
    admin::trim_usage(admin->usage, config.usage_retention_hours);
  });
  i.maintenance->start();
}

// ojs-graceful-shutdown.md §9.1: no new connections, no new work; the requests in
// flight finish (the caller waits for in_flight() to reach 0, up to its grace).
void BrokerApp::begin_drain() {
  auto& i = *impl_;
  i.drain.begin(now_ms());
  if (i.server) i.server->stop_accepting();
}

int BrokerApp::in_flight() const { return impl_->router.in_flight(); }

void BrokerApp::stop() {
  auto& i = *impl_;
  if (i.event_hub) i.event_hub->stop();  // open streams get server.shutdown and end, then the server closes
  if (i.webhook_dispatcher) i.webhook_dispatcher->stop();  // after the hub: nothing offers any more
  if (i.logs) i.logs->stop();            // so do log follows
  if (i.server) i.server->stop();
  if (i.maintenance) i.maintenance->stop();
  if (i.embedded) i.embedded->stop();
}

std::uint16_t BrokerApp::port() const { return impl_->server ? impl_->server->port() : 0; }

}  // namespace ojs::broker
