// Settling a queue's ended attempts (settle.lua): its usage journal folded, and
// the ACKs' completion lines journaled beside the usage lines turned into what they
// stand for (the completed count and its minute, the finished index, run times).
// Every read of what settle.lua writes calls this first, so a reader sees every
// transition that answered before it; the maintenance pass settles every queue
// about once a second.
#pragma once
#include <string>
#include <vector>

#include "broker/store/redis_client.hpp"

namespace ojs::broker {

// Settles each queue until nothing waits: one pipelined round trip for all of them,
// then more only for a queue with more than a call's share waiting.
void settle(RedisPool& redis, const std::vector<std::string>& queues);

}  // namespace ojs::broker
