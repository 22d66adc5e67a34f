#include "broker/auth/token_file.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

#include "ojs/core/envelope.hpp"

namespace ojs::broker::auth {

namespace {

[[noreturn]] void bad(std::size_t index, const std::string& what) {
  throw std::runtime_error("token file entry " + std::to_string(index) + ": " + what);
}

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::set<Role> roles_of(const nlohmann::json& entry, std::size_t index) {
  nlohmann::json names = entry.contains("roles") ? entry["roles"] : nlohmann::json::array();
  if (entry.contains("role")) names.push_back(entry["role"]);
  if (!names.is_array() || names.empty()) bad(index, "\"roles\" must be a non-empty array of producer|worker|admin");
  std::set<Role> roles;
  for (const auto& n : names) {
    const auto role = n.is_string() ? parse_role(n.get<std::string>()) : std::nullopt;
    if (!role) bad(index, "unknown role " + n.dump() + " (producer, worker, admin)");
    roles.insert(*role);
  }
  return roles;
}

}  // namespace

std::vector<Principal> parse_token_file(const nlohmann::json& entries) {
  if (!entries.is_array()) throw std::runtime_error("token file must be a JSON array of {name, roles, sha256}");
  std::vector<Principal> out;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    if (!e.is_object()) bad(i, "must be an object");
    Principal p;
    if (!e.contains("name") || !e["name"].is_string() || e["name"].get<std::string>().empty()) bad(i, "\"name\" must be a non-empty string");
    p.identity.name = e["name"].get<std::string>();
    p.identity.roles = roles_of(e, i);
    if (e.contains("tenant")) {
      if (!e["tenant"].is_string()) bad(i, "\"tenant\" must be a string");
      p.identity.tenant = e["tenant"].get<std::string>();
    }
    if (e.contains("worker_ids")) {
      if (!e["worker_ids"].is_array() || e["worker_ids"].empty()) bad(i, "\"worker_ids\" must be a non-empty array of worker ids");
      for (const auto& w : e["worker_ids"]) {
        if (!w.is_string() || !is_valid_worker_id(w.get<std::string>())) bad(i, std::string("\"worker_ids\": each ") + kWorkerIdRule);
        p.identity.worker_ids.insert(w.get<std::string>());
      }
    }
    if (e.contains("worker_id_prefix")) {
      if (!e["worker_id_prefix"].is_string() || e["worker_id_prefix"].get<std::string>().empty())
        bad(i, "\"worker_id_prefix\" must be a non-empty string");
      p.identity.worker_id_prefix = e["worker_id_prefix"].get<std::string>();
    }
    if (!e.contains("sha256") || !e["sha256"].is_string() || !is_sha256_hex(e["sha256"].get<std::string>()))
      bad(i, "\"sha256\" must be the 64 lowercase hex digits of the token's SHA-256 (printf %s TOKEN | sha256sum)");
    p.sha256 = e["sha256"].get<std::string>();
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Principal> load_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read token file " + path);
  const auto doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded()) throw std::runtime_error("token file " + path + " is not valid JSON");
  return parse_token_file(doc);
}

}  // namespace ojs::broker::auth
