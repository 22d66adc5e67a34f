// Who is calling: the principal a bearer token resolved to (or the anonymous
// caller of a broker without a token file), and the identity of the request
// being handled on this thread.
#pragma once
#include <set>
#include <string>

#include "broker/auth/roles.hpp"

namespace ojs::broker::auth {

struct Identity {
  std::string name;        // token entry name; "anonymous" without a token file
  std::set<Role> roles;
  std::string tenant;      // pinned tenant of the token entry ("" = none): sees only its tenant's jobs
  // Worker binding (token file "worker_ids", "worker_id_prefix"): when either is
  // set, every worker call must carry a worker_id that is one of these or starts
  // with the prefix. Unbound tokens may name any worker id.
  std::set<std::string> worker_ids;
  std::string worker_id_prefix;
  bool anonymous = false;

  bool has(Role role) const { return roles.count(role) != 0; }
  bool binds_workers() const { return !worker_ids.empty() || !worker_id_prefix.empty(); }
  bool may_act_as(const std::string& worker_id) const {
    if (!binds_workers()) return true;
    return worker_ids.count(worker_id) != 0 ||
           (!worker_id_prefix.empty() && worker_id.compare(0, worker_id_prefix.size(), worker_id_prefix) == 0);
  }
};

// The identity of the request being dispatched on this thread. The access
// middleware sets it before every handler (dispatch is synchronous on one I/O
// thread), so handlers and services below them read it without it being
// threaded through every signature. nullptr outside a request.
const Identity* current_identity();
void set_current_identity(const Identity* identity);
// The caller's name, as recorded with what it does (a hold, a cron); `anonymous`
// when the request carries no identity.
std::string current_caller_name(const std::string& anonymous);

// Worker calls (FETCH, ACK, NACK, BEAT, checkpoint) name the worker in
// `worker_id` ("" = not given): a bound token must give one of its own, else
// OjsError forbidden naming the field. Unbound and anonymous callers pass.
void authorize_worker_id(const std::string& worker_id);

// The tenant the caller is pinned to ("" = none): jobs and events of other
// tenants are invisible to it (404, filtered).
std::string tenant_scope();

}  // namespace ojs::broker::auth
