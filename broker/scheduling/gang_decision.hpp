// Which gang a fetching worker joins, decided in C++ over a read of the queue's
// forming gang, its growing elastic gangs and the eligible gang classes' heads
// (gang_candidates.lua); the commit (claim_gang.lua) only checks that the pick still
// holds and records it (docs/matching.md "Gangs"). Pure: no Redis.
#pragma once
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/store/claim_store.hpp"
#include "broker/store/fair_shares.hpp"

namespace ojs::broker {

// The score of the first waiting job outside the gang classes that this worker could
// take (none: no such job). Asked only when an elastic gang could grow with the worker.
using RivalScore = std::function<std::optional<double>()>;

// The tenants' shares of a `fair` queue under its tenant order (none: another policy
// or order). Asked only when elastic gangs of several tenants compete for the worker.
using TenantShares = std::function<std::optional<FairShares>()>;

// The rules, in order:
// - a forming gang (one whose job still waits, holding members, not expired) is the
//   only one that may hold members: the worker joins it when it may take its class
//   and, for a gang with a same_label, has its first member's value of that label
//   (a worker already held by it is answered by the commit);
// - else, when no gang forms, the eligible class head with the lowest score (the
//   queue's order) that has not expired, is not backing off after a hold that timed
//   out, and whose same_label the worker has, starts forming;
// - a running elastic gang below its max_size that the worker may join (its class,
//   its label, not a member yet, no rank ACKed) grows by this worker instead when it
//   is ahead, in the queue's order, of the gang the worker would join or form and of
//   every other waiting job the worker could take (`rival`); the best such gang first;
// - elastic gangs of one priority band share the nodes: when the queue's order would
//   give the worker to an elastic gang (`elastic`: the elastic gang classes), every
//   elastic gang of that band it could grow, join or start competes for it, and the
//   one furthest below its share takes it (elastic_share.hpp): under `fair`, the
//   gang of the tenant with the lowest share (`shares`), else the smallest gang;
// - a worker a capacity hold keeps for a preemptor (`may_grow` false) grows no running
//   gang: the capacity waits for the gang it was freed for. Else the gang a member just
//   left to make room would grow straight back onto the worker, and leave again.
GangPick decide_gang(const GangCandidates& candidates, const std::vector<GangClass>& eligible, const std::string& worker_id,
                     const RivalScore& rival = {}, const std::set<std::string>& elastic = {}, const TenantShares& shares = {},
                     bool may_grow = true);

}  // namespace ojs::broker
