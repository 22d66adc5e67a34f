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
  std::string tenant;      // pinned tenant of the token entry ("" = none)
  bool anonymous = false;

  bool has(Role role) const { return roles.count(role) != 0; }
};

// The identity of the request being dispatched on this thread. The access
// middleware sets it before every handler (dispatch is synchronous on one I/O
// thread), so handlers and services below them read it without it being
// threaded through every signature. nullptr outside a request.
const Identity* current_identity();
void set_current_identity(const Identity* identity);

}  // namespace ojs::broker::auth
