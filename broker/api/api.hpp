// Each API module registers its routes on the router. Dependencies are passed in
// explicitly so that a module can be tested with the real services on its own.
// Handlers call services only, never the store (scripts/check-layers.sh).
#pragma once
#include <chrono>

#include "broker/config.hpp"
#include "broker/http/drain_gate.hpp"
#include "broker/http/router.hpp"
#include "broker/admin/sources.hpp"
#include "broker/jobs/batch_push.hpp"
#include "broker/jobs/fetch_service.hpp"
#include "broker/jobs/job_service.hpp"
#include "broker/jobs/job_views.hpp"
#include "broker/jobs/push_service.hpp"
#include "broker/jobs/reaper.hpp"
#include "broker/progress/progress_service.hpp"
#include "broker/uniqueness/unique_push.hpp"
#include "broker/jobs/queue_service.hpp"
#include "broker/workers/worker_registry.hpp"

namespace ojs::broker {

class EstimateService;

struct ApiContext {
  const BrokerConfig& config;
  JobService& jobs;     // ACK, FAIL, CANCEL, BEAT
  PushService& push;    // PUSH
  FetchService& fetch;  // FETCH
  JobViews& views;      // INFO, the job and queue diagnosis, a job's tenant
  Reaper& reaper;       // a deregistered worker's jobs
  QueueService& queues;
  WorkerRegistry& workers;
  BatchPushSources& batch;
  UniquePushSources& unique;
  ProgressSources& progress;
  admin::Sources& admin;
  std::chrono::steady_clock::time_point started_at;
  DrainGate& drain;  // draining: no new work taken; health and readiness say so
  EstimateService* estimates = nullptr;  // the job diagnosis's `estimate` (none: left out)
};

namespace obs { class Observability; }
// manifest, health, readiness, the admin drain switch
void register_system_api(Router& router, ApiContext& ctx, obs::Observability& observability);
// INFO, the job's diagnosis, CANCEL, kill.
void register_jobs_api(Router& router, ApiContext& ctx);
namespace governance { class QueueConfigs; }
// PUSH, which answers its queue's start-rate window in X-RateLimit-* (so it is
// registered once the queue configs exist).
void register_push_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs);
class JobControl;
// POST /jobs/{id}/hold and /release, PATCH /jobs/{id}.
void register_job_control_api(Router& router, ApiContext& ctx, JobControl& control);
class LogService;
// POST /workers/logs, GET /jobs/{id}/logs (tail, since, follow).
void register_logs_api(Router& router, ApiContext& ctx, LogService& logs);
void register_batch_api(Router& router, ApiContext& ctx);  // POST /ojs/v1/jobs/batch
// POST /jobs/{id}/what-if, GET /queues/{name}/forecast.
void register_estimate_api(Router& router, ApiContext& ctx, EstimateService& estimates);
class CronService;
void register_cron_api(Router& router, CronService& crons);  // /ojs/v1/cron
class WorkflowService;
void register_workflows_api(Router& router, WorkflowService& workflows);  // /ojs/v1/workflows (level 3)
void register_progress_api(Router& router, ApiContext& ctx);  // workers/progress, jobs/{id}/progress
void register_workers_api(Router& router, ApiContext& ctx);
namespace governance { class QueueConfigs; }
// Queue listing, stats (with the backpressure bound), diagnosis, pause/resume, deletion.
void register_queues_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs);
void register_rate_limits_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs);
class EventLog;
class EventHub;
void register_events_api(Router& router, ApiContext& ctx, EventLog& events, EventHub& hub);  // polling and SSE
void register_dead_letter_api(Router& router, ApiContext& ctx);
namespace governance { class QueueConfigs; }
// Admin: queue config, budget/ledger, reconciliation, jobs by state.
void register_governance_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs);
// /metrics, /ojs/status, admin overview
void register_observability_api(Router& router, obs::Observability& observability);
// The OJS admin API extension: queues, jobs, bulk actions, stats, worker deregistration.
void register_admin_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs);
// Tenants and their statistics (ojs-multi-tenancy.md §10).
void register_tenants_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs);

}  // namespace ojs::broker
