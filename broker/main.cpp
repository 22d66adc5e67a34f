// broker: the OJS backend. Flags map one to one onto BrokerConfig.
#include <cstdlib>
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>

#include "broker/app.hpp"
#include "broker/http/cors.hpp"
#include "broker/store/lua_scripts.hpp"

namespace {

// HTTP serving: address, threads, request limits, TLS, CORS, shutdown.
void add_server_options(CLI::App& cli, ojs::broker::BrokerConfig& config) {
  cli.add_option("--listen", config.listen_address, "Address to bind")->capture_default_str();
  cli.add_option("--port", config.port, "HTTP port (0 picks a free one; it is printed)")->capture_default_str();
  cli.add_option("--threads", config.http_threads, "HTTP I/O threads (0: half the cores, 1 to 8)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  cli.add_option("--handler-threads", config.handler_threads, "Request handler threads (they wait on Redis; apart from the I/O threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cli.add_option("--expensive-reads", config.expensive_reads,
                 "Diagnoses, estimates, log reads and listings handled at once (beyond: 503 with Retry-After; 0: a quarter of "
                 "--handler-threads, at least 1)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  cli.add_option("--io-thread-handlers", config.io_thread_handlers,
                 "Run FETCH, ACK, NACK, PUSH and heartbeat on the I/O thread that read them, suspending while Redis answers "
                 "(false: on the handler pool; always so on a Redis Cluster)")
      ->capture_default_str();
  cli.add_option("--max-body-bytes", config.max_body_bytes, "Largest accepted request body")->capture_default_str();
  cli.add_option("--http-header-timeout-ms", config.http_header_timeout_ms, "A request's header must arrive within this of its first byte")
      ->capture_default_str()->check(CLI::Range(1, 3600000));
  cli.add_option("--http-body-timeout-ms", config.http_body_timeout_ms, "A request's body must arrive within this after its header")
      ->capture_default_str()->check(CLI::Range(1, 3600000));
  cli.add_option("--http-idle-timeout-ms", config.http_idle_timeout_ms, "An idle keep-alive connection is closed after this")
      ->capture_default_str()->check(CLI::Range(1, 3600000));
  cli.add_option("--max-connections", config.max_connections,
                 "Open HTTP connections; one more closes the one waiting longest for its request")
      ->capture_default_str()->check(CLI::Range(1, 1000000));
  cli.add_option("--tls-cert", config.tls_cert, "PEM certificate (chain): serve HTTPS (with --tls-key)");
  cli.add_option("--tls-key", config.tls_key, "PEM private key of --tls-cert");
  cli.add_option("--cors-origin", config.cors_origins,
                 "Browser origin (scheme://host[:port]) allowed to call the API from another origin (CORS; repeatable; none: no CORS)")
      ->check(CLI::Validator(
          [](std::string& origin) {
            return ojs::broker::is_valid_origin(origin) ? std::string() : "must be scheme://host[:port], e.g. https://dash.example.com";
          },
          "ORIGIN"));
  cli.add_option("--shutdown-timeout-ms", config.shutdown_timeout_ms, "On SIGTERM/SIGINT, requests in flight get this long before the broker stops (a second signal: at once)")->capture_default_str()->check(CLI::Range(0LL, 3600000LL));
}

// Redis: the URL (or an embedded server) and waiting for replicas.
void add_redis_options(CLI::App& cli, ojs::broker::BrokerConfig& config) {
  cli.add_option("--redis", config.redis_url,
                 "Redis URL (redis://host:port/db, unix:///path, or redis-cluster://host:port,host:port,... for a Redis Cluster). "
                 "Empty: start an embedded redis-server");
  cli.add_option("--redis-replica-acks", config.redis_replica_acks,
                 "Replicas that must confirm each write (WAIT) before it is answered as done, so a failover cannot undo it "
                 "(0: replication stays asynchronous; docs/operations.md, \"What a failover can lose\")")
      ->capture_default_str()
      ->check(CLI::Range(0, 16));
  cli.add_option("--redis-replica-wait-ms", config.redis_replica_wait_ms,
                 "How long a write waits for --redis-replica-acks replicas; beyond it the request answers 503 (a PUSH 504 with its id)")
      ->capture_default_str()
      ->check(CLI::Range(1, 60000));
  cli.add_option("--data-dir", config.data_dir, "Data directory of the embedded redis-server")->capture_default_str();
  cli.add_option("--redis-server", config.redis_server_binary, "redis-server binary for the embedded mode")->capture_default_str();
}

// Scheduling, maintenance, preemption and retention.
void add_scheduling_options(CLI::App& cli, ojs::broker::BrokerConfig& config) {
  cli.add_option("--visibility-timeout-ms", config.default_visibility_timeout_ms, "Default visibility timeout")->capture_default_str();
  cli.add_option("--maintenance-interval-ms", config.maintenance_interval_ms,
                 "Promoter/reaper cadence (0: this broker runs no maintenance pass; another broker of the Redis must)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cli.add_option("--worker-dead-after-ms", config.worker_dead_after_ms, "Reclaim jobs of workers silent this long")->capture_default_str();
  cli.add_option("--usage-retention-hours", config.usage_retention_hours,
                 "Hours of the per-hour resource-usage rollup kept for GET /ojs/v1/admin/usage (the totals are kept forever)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{10LL * 366 * 24}));
  cli.add_option("--finished-retention-ms", config.finished_retention_ms, "Finished jobs stay listable by the admin API this long (a queue's retention overrides)")->capture_default_str()->check(CLI::Range(std::int64_t{60000}, std::int64_t{366LL * 24 * 3600 * 1000}));
  cli.add_option("--finished-max-jobs", config.finished_max_jobs, "Finished jobs listable per state and queue, the newest (a queue's retention.max_jobs overrides)")->capture_default_str()->check(CLI::Range(1LL, 10000000LL));
  cli.add_option("--cordon-unhealthy-share", config.cordon_unhealthy_share,
                 "Set a worker quiet (cordon) once this share of its GPU devices is unhealthy (1 = all; 0 = never)")
      ->check([](const std::string& v) {  // CLI::Range(0.0, 1.0) refuses 0 in CLI11 2.x
        const double share = std::strtod(v.c_str(), nullptr);
        return share >= 0 && share <= 1 ? std::string() : "must be a share from 0 to 1";
      })
      ->capture_default_str();
  cli.add_option("--worker-retention-ms", config.worker_retention_ms, "Forget workers silent this long, after reclaiming their jobs (at least --worker-dead-after-ms)")->capture_default_str();
  cli.add_option("--locality-delay-ms", config.locality_delay_ms, "Delay scheduling bound for model locality")->capture_default_str();
  cli.add_option("--placement", config.placement, "GPU device placement: pack or spread")->capture_default_str()->check(CLI::IsMember({"pack", "spread"}));
  cli.add_option("--preemption-interval-ms", config.preemption_interval_ms, "Preemption controller cadence (leader lease: 3x, at least 2 s)")->capture_default_str()->check(CLI::Range(10, 600000));
  cli.add_option("--capacity-hold-ms", config.capacity_hold_ms, "GPUs freed by preemption stay held for the preemptor this long after the victims' deadline")->capture_default_str();
  cli.add_option("--checkpoint-prefix", config.checkpoint_prefixes, "Allowed checkpoint storage URI prefix (repeatable; none: any s3/gs/az/file URI)");
  cli.add_option("--fetch-walk-min-classes", config.fetch_walk_min_classes, "A FETCH judges the classes of a queue with this many or more in the order of their heads, only as far as one can win (0: always)")->capture_default_str();
}

// Bounds on what one request, queue, cron or job may ask.
void add_bounds_options(CLI::App& cli, ojs::broker::BrokerConfig& config, ojs::broker::CronLimits& crons) {
  cli.add_option("--max-fetch-queues", config.max_fetch_queues, "Most queues one FETCH may name")->capture_default_str()->check(CLI::Range(1, 100000));
  cli.add_option("--max-heartbeat-jobs", config.max_heartbeat_jobs, "Most job ids one heartbeat may name")->capture_default_str()->check(CLI::Range(1, 1000000));
  cli.add_option("--max-queues", config.max_queues, "Most queues that may exist (0: no bound)")->capture_default_str()->check(CLI::Range(0, 100000000));
  cli.add_option("--max-crons", crons.max_crons, "Most crons that may be registered (0: no bound)")->capture_default_str()->check(CLI::Range(0, 100000000));
  cli.add_option("--max-crons-per-tenant", crons.max_crons_per_tenant, "Most crons of one tenant (0: no bound)")->capture_default_str()->check(CLI::Range(0, 100000000));
  cli.add_option("--max-job-gpus", config.max_job_gpus, "No job may ask more GPUs (0: no bound)")->capture_default_str();
  cli.add_option("--max-job-gpu-memory-gb", config.max_job_gpu_memory_gb, "No job may ask more GB per GPU (0: no bound)")->capture_default_str();
  cli.add_option("--max-job-memory-gb", config.max_job_memory_gb, "No job may ask more host memory (0: no bound)")->capture_default_str();
  cli.add_option("--max-job-timeout-seconds", config.max_job_timeout_seconds, "No job may ask a longer timeout (0: no bound)")->capture_default_str();
}

// Access control and admission (docs/operations.md).
void add_access_options(CLI::App& cli, ojs::broker::BrokerConfig& config) {
  cli.add_option("--auth-file", config.auth_file, "Token file: JSON [{name, roles[], sha256[, tenant]}]. Absent: anonymous admin mode, loopback only");
  cli.add_flag("--test-directives", config.test_directives,
               "Test hook, never for production: a heartbeat naming a job whose meta.test_directive is quiet or terminate answers that state");
  cli.add_flag("--allow-anonymous", config.allow_anonymous, "Serve anonymous callers (no --auth-file) on a non-loopback address");
  cli.add_option("--push-rate", config.push_rate_per_second, "PUSH rate limit per identity, per second (0: none)")->capture_default_str();
  cli.add_option("--push-burst", config.push_burst, "PUSH burst per identity")->capture_default_str();
  cli.add_option("--admin-label-prefix", config.admin_label_prefixes, "Label key prefix only admins may use in selectors/affinity (repeatable)");
  cli.add_option("--allowed-model", config.allowed_models, "Allowed model id, 'prefix*' for a prefix (repeatable; none: any)");
}

// Job events, logs and their streams.
void add_events_options(CLI::App& cli, ojs::broker::BrokerConfig& config) {
  cli.add_option("--events", config.events, "Job events: bounded (each queue's stream capped at --events-max-len) or off (none recorded)")->capture_default_str()->check(CLI::IsMember({"bounded", "off"}));
  cli.add_option("--schema-validation", config.schema_validation, "PUSH args against the type's registered schema: strict (refuse, 422), warn (accept with a warning) or off")->capture_default_str()->check(CLI::IsMember({"strict", "warn", "off"}));
  cli.add_option("--events-max-len", config.events_max_len, "Approximate cap of each queue's event stream")->capture_default_str()->check(CLI::Range(100LL, 100000000LL));
  cli.add_option("--job-log-max-bytes", config.job_log_max_bytes, "Bytes of each job's stdout/stderr kept (the most recent)")->capture_default_str()->check(CLI::Range(1024LL, 64LL << 20));
  cli.add_option("--max-event-streams", config.max_event_streams, "Open SSE event streams per broker (beyond: 503)")->capture_default_str()->check(CLI::Range(0, 100000));
  cli.add_option("--event-stream-keepalive-ms", config.event_stream_keepalive_ms, "Heartbeat comment on an idle SSE stream after this long")->capture_default_str()->check(CLI::Range(100, 3600000));
  cli.add_option("--event-stream-poll-ms", config.event_stream_poll_ms, "Cadence of the reader that feeds SSE streams")->capture_default_str()->check(CLI::Range(10, 60000));
}

// Webhook delivery.
void add_webhooks_options(CLI::App& cli, ojs::broker::webhooks::WebhookSettings& hooks) {
  cli.add_flag("--webhooks-allow-private", hooks.allow_private, "Webhook URLs may point at loopback, link-local, private (RFC 1918, ULA, CGNAT) and unspecified addresses (off: refused, at creation and at delivery)");
  cli.add_option("--webhooks-max-subscriptions", hooks.max_subscriptions, "Most webhook subscriptions (0: no bound)")->capture_default_str()->check(CLI::Range(0LL, 1000000LL));
  cli.add_option("--webhooks-queue-size", hooks.queue_size, "Webhook deliveries waiting or being sent; beyond, new ones are dropped and counted")->capture_default_str()->check(CLI::Range(std::size_t{1}, std::size_t{10000000}));
  cli.add_option("--webhooks-threads", hooks.threads, "Threads sending webhook deliveries")->capture_default_str()->check(CLI::Range(1, 64));
  cli.add_option("--webhooks-max-attempts", hooks.max_attempts, "Attempts of one webhook delivery before it is dead")->capture_default_str()->check(CLI::Range(1, 20));
  cli.add_option("--webhooks-retry-base-ms", hooks.retry_base_ms, "Delay before a delivery's first retry; later ones scale as ojs-webhooks.md 7.2 (x4, x20, x120, ...)")->capture_default_str()->check(CLI::Range(std::int64_t{10}, std::int64_t{3600000}));
  cli.add_option("--webhooks-timeout-ms", hooks.timeout_ms, "Timeout of one webhook delivery attempt")->capture_default_str()->check(CLI::Range(std::int64_t{100}, std::int64_t{120000}));
  cli.add_option("--webhooks-log-size", hooks.log_size, "Delivery attempts kept per subscription (GET /ojs/v1/webhooks/deliveries)")->capture_default_str()->check(CLI::Range(std::size_t{1}, std::size_t{10000}));
}

}  // namespace

int main(int argc, char** argv) {
  ojs::broker::BrokerConfig config;
  ojs::broker::CronLimits crons;
  ojs::broker::webhooks::WebhookSettings hooks;
  CLI::App cli{"OJS broker with capability-aware FETCH for GPU job queues"};
  add_server_options(cli, config);
  add_redis_options(cli, config);
  add_scheduling_options(cli, config);
  add_bounds_options(cli, config, crons);
  add_access_options(cli, config);
  add_events_options(cli, config);
  add_webhooks_options(cli, hooks);
  bool print_lua_library = false;
  cli.add_flag("--print-lua-library", print_lua_library, "Print the Redis Function library this broker would load (with --events-max-len) and exit");
  std::string log_level = "info";
  cli.add_option("--log-level", log_level, "trace, debug, info, warn, error")->capture_default_str();
  CLI11_PARSE(cli, argc, argv);
  spdlog::set_level(spdlog::level::from_str(log_level));

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // threads inherit the mask; we sigwait below
  std::signal(SIGPIPE, SIG_IGN);

  // Before any Redis connection: the scripts are loaded with the bound in them.
  ojs::broker::set_event_stream_bound(config.events == "off" ? 0 : config.events_max_len);
  if (print_lua_library) {  // bench/lua-profile.py measures exactly the text the broker loads
    std::fputs(ojs::broker::lua_library().code.c_str(), stdout);
    return 0;
  }
  ojs::broker::BrokerApp app(config, crons, hooks);
  try {
    app.start();
  } catch (const std::exception& e) {
    spdlog::critical("broker failed to start: {}", e.what());
    return 1;
  }
  std::printf("OJS_BROKER_READY port=%u\n", static_cast<unsigned>(app.port()));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  // ojs-graceful-shutdown.md §9: stop accepting, let the requests in flight finish (up
  // to --shutdown-timeout-ms), then stop the loops and close Redis. A second signal
  // stops at once (§4.2's double SIGTERM).
  spdlog::info("signal {} received, draining ({} requests in flight)", sig, app.in_flight());
  app.begin_drain();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(config.shutdown_timeout_ms);
  while (app.in_flight() > 0) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::milliseconds(0)) {
      spdlog::warn("shutdown timeout: {} requests still in flight are cut", app.in_flight());
      break;
    }
    const auto wait = std::min<std::chrono::nanoseconds>(left, std::chrono::milliseconds(50));
    const timespec ts{0, static_cast<long>(wait.count())};
    if (sigtimedwait(&signals, nullptr, &ts) > 0) {  // else EAGAIN: 50 ms passed, look again
      spdlog::warn("second signal: stopping now with {} requests in flight", app.in_flight());
      break;
    }
  }
  spdlog::info("shutting down");
  app.stop();
  return 0;
}
