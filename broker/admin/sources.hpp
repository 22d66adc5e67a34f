// What each admin page reads and changes: the stores (and services) it uses,
// wired in app.cpp; no admin page reaches a store through a service.
#pragma once
#include "broker/jobs/job_service.hpp"
#include "broker/store/dead_letter_store.hpp"
#include "broker/store/job_directory.hpp"
#include "broker/store/job_index_store.hpp"
#include "broker/store/job_reads.hpp"
#include "broker/store/queue_directory.hpp"
#include "broker/store/stats_history_store.hpp"
#include "broker/store/usage_store.hpp"

namespace ojs::broker::admin {

struct JobListingSources {  // job_listing.hpp
  JobIndexStore& index;
  QueueDirectory& queues;
  JobReads& reads;
};

struct DeadLetterSources {  // dead_letter.hpp
  DeadLetterStore& dead;
  JobDirectory& directory;
  QueueDirectory& queues;
  JobIndexStore& index;  // purge of the finished indexes
};

struct BulkSources {  // bulk_actions.hpp
  JobListingSources& listing;
  JobService& jobs;  // cancel
  DeadLetterStore& dead;
  JobDirectory& directory;
};

struct HistorySources {  // stats_history.hpp
  StatsHistoryStore& history;
  QueueDirectory& queues;
};

struct UsageSources {  // usage.hpp
  UsageStore& usage;
  QueueDirectory& queues;
};

struct TenantScanSources {  // tenant_stats.hpp
  JobIndexStore& index;
  QueueDirectory& queues;
};

// The admin API's handlers reach each page's sources through this (api/ names no store).
struct Sources {
  JobListingSources& listing;
  DeadLetterSources& dead_letter;
  BulkSources& bulk;
  HistorySources& history;
  UsageSources& usage;
  TenantScanSources& tenants;
};

}  // namespace ojs::broker::admin
