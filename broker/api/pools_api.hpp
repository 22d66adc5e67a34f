// Worker pools and the scheduling statistics (ojs-fair-scheduling.md §10), admin only.
#pragma once
#include "broker/api/api.hpp"

namespace ojs::broker {

namespace pools {
class PoolService;
class SchedulingStats;
}  // namespace pools
void register_pools_api(Router& router, pools::PoolService& pools, pools::SchedulingStats& stats);

}  // namespace ojs::broker
