#include "broker/auth/identity.hpp"

#include <nlohmann/json.hpp>

#include "ojs/core/error.hpp"
#include "ojs/core/fibers.hpp"

namespace ojs::broker::auth {

namespace {
// Per request: a fiber (ojs/core/fibers.hpp) keeps its own while other requests run on its thread.
fibers::Local<const Identity*> current_slot;
}

const Identity* current_identity() { return current_slot.get(); }
void set_current_identity(const Identity* identity) { current_slot.get() = identity; }

std::string current_caller_name(const std::string& anonymous) {
  const auto* who = current_identity();
  return who ? who->name : anonymous;
}

void authorize_worker_id(const std::string& worker_id) {
  const Identity* who = current_slot.get();
  if (!who || !who->binds_workers()) return;
  if (worker_id.empty())
    throw OjsError(ErrorCode::forbidden, "token '" + who->name + "' is bound to worker ids: the request must carry its worker_id",
                   {{"field", "worker_id"}, {"rule", "required for a token bound to worker ids"}, {"identity", who->name}});
  if (!who->may_act_as(worker_id))
    throw OjsError(ErrorCode::forbidden, "token '" + who->name + "' may not act as worker " + worker_id,
                   {{"field", "worker_id"}, {"rule", "must be one of the token's own worker ids"}, {"identity", who->name}});
}

std::string tenant_scope() {
  const Identity* who = current_slot.get();
  return who ? who->tenant : std::string();
}

}  // namespace ojs::broker::auth
