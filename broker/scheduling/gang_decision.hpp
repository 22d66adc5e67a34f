// Which gang a fetching worker joins, decided in C++ over a read of the queue's
// forming gang and the eligible gang classes' heads (gang_candidates.lua); the commit
// (claim_gang.lua) only checks that the pick still holds and records it
// (docs/matching.md "Gangs"). Pure: no Redis.
#pragma once
#include <string>
#include <vector>

#include "broker/store/claim_store.hpp"

namespace ojs::broker {

// The rules, in order:
// - a forming gang (one whose job still waits, holding members, not expired) is the
//   only one that may hold members: the worker joins it when it may take its class
//   and, for a gang with a same_label, has its first member's value of that label
//   (a worker already held by it is answered by the commit); else nothing;
// - else the eligible class head with the lowest score (the queue's order) that has
//   not expired, is not backing off after a hold that timed out, and whose
//   same_label the worker has, starts forming;
// - else nothing.
GangPick decide_gang(const GangCandidates& candidates, const std::vector<GangClass>& eligible, const std::string& worker_id);

}  // namespace ojs::broker
