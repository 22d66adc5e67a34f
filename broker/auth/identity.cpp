#include "broker/auth/identity.hpp"

namespace ojs::broker::auth {

namespace {
thread_local const Identity* current = nullptr;
}

const Identity* current_identity() { return current; }
void set_current_identity(const Identity* identity) { current = identity; }

}  // namespace ojs::broker::auth
