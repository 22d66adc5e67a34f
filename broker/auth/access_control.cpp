#include "broker/auth/access_control.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

#include "broker/auth/token_hash.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker::auth {

namespace {
constexpr std::string_view kPushRoute = "POST /ojs/v1/jobs";

std::string bearer_token(const std::string& authorization) {
  constexpr std::string_view scheme = "Bearer ";
  if (authorization.size() <= scheme.size()) return {};
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != std::tolower(static_cast<unsigned char>(scheme[i]))) return {};
  return authorization.substr(scheme.size());
}
}  // namespace

AccessControl::AccessControl(AccessOptions options)
    : principals_(std::move(options.principals)), push_limiter_(options.push_rate_per_second, options.push_burst) {
  anonymous_.name = "anonymous";
  anonymous_.anonymous = true;
  anonymous_.roles = {Role::producer, Role::worker, Role::admin};
  unauthenticated_.name = "unauthenticated";
  unauthenticated_.anonymous = true;
}

const Identity& AccessControl::authenticate(const std::string& authorization) const {
  if (anonymous_mode()) return anonymous_;
  const std::string token = bearer_token(authorization);
  if (token.empty())
    throw OjsError(ErrorCode::unauthorized, "a bearer token is required (Authorization: Bearer <token>)",
                   {{"field", "Authorization"}, {"rule", "required"}});
  const std::string digest = sha256_hex(token);
  const Identity* found = nullptr;
  for (const auto& p : principals_)  // every entry is compared: the time does not depend on which one matches
    if (constant_time_equal(digest, p.sha256) && !found) found = &p.identity;
  if (!found)
    throw OjsError(ErrorCode::unauthorized, "the bearer token is not valid", {{"field", "Authorization"}, {"rule", "unknown token"}});
  return *found;
}

void AccessControl::admit(const HttpRequest& request, const std::string& route) {
  set_current_identity(nullptr);
  const auto authorization = request.header("authorization");
  if (is_public_route(route) && authorization.empty()) {
    set_current_identity(anonymous_mode() ? &anonymous_ : &unauthenticated_);
    return;
  }
  const Identity& who = authenticate(authorization);
  if (!roles_allow(who.roles, route)) {
    std::string roles;
    for (auto r : who.roles) {
      if (!roles.empty()) roles += ',';
      roles += to_string(r);
    }
    throw OjsError(ErrorCode::forbidden, "'" + who.name + "' (" + roles + ") may not call " + route,
                   {{"identity", who.name}, {"roles", roles}, {"route", route}});
  }
  if (route == kPushRoute) charge_push(who, 1);
  set_current_identity(&who);
}

void AccessControl::charge_push(const Identity& who, std::size_t jobs) {
  if (!push_limiter_.enabled()) return;
  if (static_cast<double>(jobs) > push_limiter_.burst())
    throw OjsError(ErrorCode::rate_limited,
                   "a batch of " + std::to_string(jobs) + " jobs exceeds the PUSH burst of '" + who.name + "' (" +
                       std::to_string(static_cast<long long>(push_limiter_.burst())) + " jobs); split the batch",
                   {{"field", "jobs"}, {"rule", "at most the identity's PUSH burst"}, {"identity", who.name}});
  if (const double wait = push_limiter_.acquire(who.name, static_cast<double>(jobs)); wait > 0) {
    const auto seconds = static_cast<long long>(std::ceil(wait));
    throw OjsError(ErrorCode::rate_limited, "PUSH rate limit of '" + who.name + "' exceeded; retry in " + std::to_string(seconds) + " s",
                   {{"identity", who.name}, {"retry_after_s", seconds}});
  }
}

bool AccessControl::take_push_token(const std::string& identity) {
  return !push_limiter_.enabled() || push_limiter_.acquire(identity, 1) == 0;
}

void AccessControl::install(Router& router) {
  router.use([this](const HttpRequest& request, const std::string& route) { admit(request, route); });
}

}  // namespace ojs::broker::auth
