// Fixture: the store.
#include "broker/store/redis_client.hpp"
