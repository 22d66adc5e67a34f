// Bounds on cron registrations (docs/operations.md, "Limits"): --max-crons and
// --max-crons-per-tenant. A new cron beyond one is 422 naming it; replacing a
// cron by its name does not count.
#pragma once

namespace ojs::broker {

struct CronLimits {
  long long max_crons = 10000;            // crons in all (0 = no cap)
  long long max_crons_per_tenant = 1000;  // crons of one tenant (0 = no cap)
};

}  // namespace ojs::broker
