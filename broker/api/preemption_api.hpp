// HTTP for preemption (api/preemption_api.cpp): checkpoint commits (workers) and
// reservations (admin). Apart from api.hpp so that preemption/ stays free of the API.
#pragma once
#include "broker/api/api.hpp"

namespace ojs::broker {

void register_preemption_api(Router& router, ApiContext& ctx);

}  // namespace ojs::broker
