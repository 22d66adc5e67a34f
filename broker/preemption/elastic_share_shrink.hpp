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

#include "broker/preemption/capacity_plan.hpp"
#include "broker/preemption/victims.hpp"

namespace ojs::broker {

// The waiting elastic gang: its queue, class rank and tenant, and the members it
// holds already while it forms.
struct WaitingElasticGang {
  std::string queue;
  int class_rank = 1;
  std::string tenant;
  int held = 0;
  // Another gang forms in the queue: it takes freed workers first (a queue forms one
  // gang at a time), so nothing is freed for this one until it starts.
  bool another_forming = false;
};

// For each running elastic gang of the waiting one's queue and class rank among
// `seen` (its members, on any worker; a gang may appear once per member), the
// members it may give: those above max(min_size, its share rounded up). The shares
// split the nodes the gangs hold (less those leaving) plus the waiting one's held
// members by `weight` (the tenant's fair-policy weight; 1 each elsewhere). Gangs
// with nothing to give are left out.
std::map<std::string, int> spare_above_share(const std::vector<RunningJob>& seen, const WaitingElasticGang& waiting,
                                             const std::function<double(const std::string& tenant)>& weight);

// The workers `waiting` (needing `needed` more members to start at its minimum) gets
// freed by members of equal elastic gangs above their share leaving, and by
// lower-class work `allowed` to go; empty when they do not free `needed`. Members of
// equal gangs count as victims only for what lies above their share, and only to
// leave: an elastic gang's size is the scheduler's to choose between its min and max,
// preemptible or not (it keeps running). Nothing while another gang forms: the workers
// would be held for a gang that cannot form on them, and when the holds lapsed the
// shrunk gangs would grow back onto them. The preemption controller's rule
// (gang_preemption.cpp) and bench/simulator's elastic trace call it.
GangCapacityPlan plan_share_shrink(const WaitingElasticGang& waiting, const ml::Requirements& req, int needed,
                                   const std::vector<PreemptionSite>& open,
                                   const std::function<std::vector<RunningJob>(std::size_t)>& running_of,
                                   const ml::AssignmentOptions& assignment, const VictimFilter& allowed,
                                   const std::function<double(const std::string& tenant)>& weight);

}  // namespace ojs::broker
