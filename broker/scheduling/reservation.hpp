// A reservation: GPUs of chosen workers held for the jobs that name it. FETCH's
// `reservation` guard reads them; the admin API (preemption/reservations.cpp)
// creates and lists them.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "broker/store/preemption_store.hpp"
#include "ojs/ml/capabilities.hpp"

namespace ojs::broker {

struct Reservation {
  std::string id;
  std::vector<std::string> worker_ids;
  ml::Labels labels;       // a worker whose labels include all of these is inside
  int gpus = 0;            // GPUs held per member worker; 0 = all of its GPUs
  std::int64_t expires_at_ms = 0;
  std::int64_t created_at_ms = 0;

  bool active(std::int64_t now) const { return expires_at_ms > now; }
  bool contains(const std::string& worker_id, const ml::Capabilities* caps) const;
  nlohmann::json to_json() const;
  static Reservation parse(const nlohmann::json& body, std::int64_t now);  // 400 naming the field
};
std::map<std::string, Reservation> load_reservations(PreemptionStore& store);

}  // namespace ojs::broker
