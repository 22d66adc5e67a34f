// HTTP for preemption (api/preemption_api.cpp): checkpoint commits (workers) and
// reservations (admin). Apart from api.hpp so that preemption/ stays free of the API.
#pragma once
#include "broker/api/api.hpp"

namespace ojs::broker {

class Checkpoints;
class Reservations;
void register_preemption_api(Router& router, Checkpoints& checkpoints, Reservations& reservations);

}  // namespace ojs::broker
