// A running gang as one member sees it: its rank, the world size, the generation
// (which changes with each resize of an elastic gang) and where rank 0 is reached.
// FETCH puts these in the member's job; the heartbeat reply repeats them for every
// gang the worker runs, so a member learns a resize without fetching.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ojs::broker {

// Where rank 0 listens when its worker advertises no port (torch's default).
inline constexpr int kDefaultRendezvousPort = 29500;

// {ext_ml_gang_rank, ext_ml_gang_world_size, ext_ml_gang_generation,
//  ext_ml_gang_master_addr, ext_ml_gang_master_port, ext_ml_gang_workers}, the names a
// member's job carries; nullopt when `members` (gang_members) has no such rank.
// generation: the job's gang_generation ("" or unreadable: 1).
std::optional<nlohmann::json> gang_rendezvous(const nlohmann::json& members, int rank, const std::string& generation);

// The rank of `worker_id` in gang_members; nullopt when it is no member.
std::optional<int> gang_rank_of(const nlohmann::json& members, const std::string& worker_id);

}  // namespace ojs::broker
