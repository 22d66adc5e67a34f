// The access middleware: authenticates the bearer token (401), checks the
// route against the caller's roles (403), rate-limits PUSH per identity (429
// with Retry-After) and publishes the caller's identity for the handler.
// Without a token file every caller is an anonymous admin (local use only; see
// docs/operations.md "Access control").
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "broker/auth/identity.hpp"
#include "broker/auth/rate_limiter.hpp"
#include "broker/auth/token_file.hpp"
#include "broker/http/router.hpp"

namespace ojs::broker::auth {

struct AccessOptions {
  std::vector<Principal> principals;  // empty: anonymous mode
  double push_rate_per_second = 0;    // 0: no PUSH rate limit
  double push_burst = 0;
};

class AccessControl {
 public:
  explicit AccessControl(AccessOptions options);

  bool anonymous_mode() const { return principals_.empty(); }
  // The identity of an Authorization header value; throws OjsError unauthorized.
  const Identity& authenticate(const std::string& authorization) const;
  // Middleware body: authenticate, authorise, rate-limit, publish the identity.
  void admit(const HttpRequest& request, const std::string& route);
  // Takes `jobs` PUSH tokens of the identity (a batch PUSH, once its jobs are
  // counted), all or none; throws OjsError rate_limited.
  void charge_push(const Identity& who, std::size_t jobs);
  // One PUSH token of the identity named (a cron tick it registered): false when none is left.
  bool take_push_token(const std::string& identity);
  void install(Router& router);

 private:
  std::vector<Principal> principals_;
  Identity anonymous_;    // all roles: the caller of a broker without a token file
  Identity unauthenticated_;  // no roles: a public route called without a token
  RateLimiter push_limiter_;
};

}  // namespace ojs::broker::auth
