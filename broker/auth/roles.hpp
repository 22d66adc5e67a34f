// Roles and the routes each may call. A route is the router's pattern with its
// method ("POST /ojs/v1/jobs"), so the policy names exactly what is registered.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace ojs::broker::auth {

enum class Role { producer, worker, admin };

std::optional<Role> parse_role(std::string_view name);
std::string_view to_string(Role role);

// Routes anyone may call, even without a token (health probes, discovery).
bool is_public_route(std::string_view route);
// Whether any of `roles` may call `route`. admin may call everything.
bool roles_allow(const std::set<Role>& roles, std::string_view route);

}  // namespace ojs::broker::auth
