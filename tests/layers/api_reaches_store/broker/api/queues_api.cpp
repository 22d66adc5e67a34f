// Fixture for scripts/check-layers.sh: a handler that includes no store header
// but reaches the store through a service.
#include "broker/jobs/job_service.hpp"
void f(ojs::broker::JobService& jobs) { jobs.store().queues(); }
