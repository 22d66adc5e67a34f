// The {id} path parameter of the job routes and a tenant-pinned caller's view of
// it, shared by the job routes (jobs_api.cpp) and the job event stream.
#pragma once
#include <string>

#include "broker/api/api.hpp"

namespace ojs::broker {

// The {id} parameter, a UUIDv7 (400 naming `id` otherwise).
const std::string& job_id_param(const HttpRequest& r);
// A tenant-pinned token sees and cancels only its tenant's jobs: another
// tenant's job answers 404, exactly as a missing one.
void require_in_tenant_scope(ApiContext& ctx, const std::string& id);

}  // namespace ojs::broker
