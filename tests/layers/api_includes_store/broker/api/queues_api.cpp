// Fixture for scripts/check-layers.sh: a handler that includes a store header
// instead of calling a service.
#include "broker/store/job_store.hpp"
