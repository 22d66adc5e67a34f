// The gang classes a worker's FETCH verdicts offer the gang claim
// (Claimer::claim_gang): each eligible class with what the worker would be
// charged and its value of the gang's same_label, and which of them are elastic
// (they share the nodes: elastic_share.hpp). FETCH's gang path and the cluster
// simulator build their claims with it.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "broker/scheduling/scheduler.hpp"
#include "broker/store/claim_store.hpp"

namespace ojs::broker {

struct GangClaimClasses {
  std::vector<GangClass> eligible;
  std::set<std::string> elastic;
};

GangClaimClasses gang_claim_classes(const std::vector<ClassVerdict>& verdicts, const Scheduler& scheduler, const ClassSet& classes,
                                    const ml::Capabilities& caps);

}  // namespace ojs::broker
