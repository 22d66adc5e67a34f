// Fixture for scripts/check-layers.sh: the store calling up into a service.
#include "broker/jobs/job_service.hpp"
