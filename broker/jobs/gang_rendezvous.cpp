#include "broker/jobs/gang_rendezvous.hpp"

#include <algorithm>
#include <cstdlib>

namespace ojs::broker {

using nlohmann::json;

std::optional<json> gang_rendezvous(const json& members, int rank, const std::string& generation) {
  if (!members.is_array() || rank < 0 || rank >= static_cast<int>(members.size())) return std::nullopt;
  const json& master = members[0];
  json workers = json::array();
  for (const auto& m : members) workers.push_back(m.is_object() ? m.value("worker_id", std::string()) : std::string());
  int port = kDefaultRendezvousPort;
  if (master.is_object()) port = std::atoi(master.value("port", std::to_string(kDefaultRendezvousPort)).c_str());
  return json{{"ext_ml_gang_rank", rank},
              {"ext_ml_gang_world_size", members.size()},
              {"ext_ml_gang_generation", std::max(1, std::atoi(generation.c_str()))},
              {"ext_ml_gang_master_addr", master.is_object() ? master.value("address", std::string()) : std::string()},
              {"ext_ml_gang_master_port", port > 0 ? port : kDefaultRendezvousPort},
              {"ext_ml_gang_workers", std::move(workers)}};
}

std::optional<int> gang_rank_of(const json& members, const std::string& worker_id) {
  if (!members.is_array()) return std::nullopt;
  for (std::size_t i = 0; i < members.size(); ++i)
    if (members[i].is_object() && members[i].value("worker_id", std::string()) == worker_id) return static_cast<int>(i);
  return std::nullopt;
}

}  // namespace ojs::broker
