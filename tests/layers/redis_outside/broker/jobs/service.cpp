// Fixture for scripts/check-layers.sh: a service that speaks to Redis itself.
#include "broker/store/job_store.hpp"
void f(ojs::broker::RedisPool& redis) { redis.command({"PING"}); }
