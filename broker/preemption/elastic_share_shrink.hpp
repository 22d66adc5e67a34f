// How far a running elastic gang may shrink for an equal elastic gang that waits:
// the nodes the equal gangs hold are shared between them and the waiting one, so a
// gang holding more than its share gives members (they leave, the gang runs on
// smaller) until the waiting one can start. Without it a gang that came first keeps
// every node until it ends, however long. Pure: no Redis.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "broker/preemption/victims.hpp"

namespace ojs::broker {

// The waiting elastic gang: its queue, class rank and tenant, and the members it
// holds already while it forms.
struct WaitingElasticGang {
  std::string queue;
  int class_rank = 1;
  std::string tenant;
  int held = 0;
};

// For each running elastic gang of the waiting one's queue and class rank among
// `seen` (its members, on any worker; a gang may appear once per member), the
// members it may give: those above max(min_size, its share rounded up). The shares
// split the nodes the gangs hold (less those leaving) plus the waiting one's held
// members by `weight` (the tenant's fair-policy weight; 1 each elsewhere). Gangs
// with nothing to give are left out.
std::map<std::string, int> spare_above_share(const std::vector<RunningJob>& seen, const WaitingElasticGang& waiting,
                                             const std::function<double(const std::string& tenant)>& weight);

}  // namespace ojs::broker
