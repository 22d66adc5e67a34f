// Fixture: the store itself may name the Redis client.
#include "broker/store/redis_client.hpp"
