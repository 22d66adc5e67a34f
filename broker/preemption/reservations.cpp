// The admin's reservations: create, list, delete (the type and its stored form:
// scheduling/reservation.hpp).
#include "broker/preemption/preemption.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

using nlohmann::json;

json Reservations::create(const json& body) {
  const auto reservation = Reservation::parse(body, now_ms());
  store_.put_reservation(reservation.id, reservation.to_json().dump());
  return reservation.to_json();
}

json Reservations::list() {
  json list = json::array();
  const auto now = now_ms();
  for (const auto& [id, res] : load_reservations(store_)) {
    auto j = res.to_json();
    j["active"] = res.active(now);
    list.push_back(std::move(j));
  }
  return list;
}

void Reservations::remove(const std::string& id) {
  if (!store_.delete_reservation(id))
    throw OjsError(ErrorCode::not_found, "reservation " + id + " not found", {{"reservation_id", id}});
}

}  // namespace ojs::broker
