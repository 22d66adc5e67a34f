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

// `reads` of one queue's settled values, sent behind its settling in the same round
// trip (a reader pays no round trip of its own for it); when more than one call's
// share waited, the queue is settled to the end and the reads sent again. Their
// replies, in order. Only reads: they may be sent twice.
std::vector<RedisValue> settled_reads(RedisPool& redis, const std::string& queue,
                                      const std::vector<std::vector<std::string>>& reads);

}  // namespace ojs::broker
