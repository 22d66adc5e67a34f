// ojs-multi-tenancy.md §5.3: the X-OJS-Tenant header names the tenant of what is
// pushed. It fills meta.tenant_id, where tenant quotas (and fair share) read it.
#pragma once
#include <nlohmann/json.hpp>

#include "broker/http/message.hpp"

namespace ojs::broker {

// One job: meta.tenant_id = the header's tenant. A malformed tenant is a 400 on
// X-OJS-Tenant; a body naming another tenant is a 400 on `<field_prefix>meta.tenant_id`.
nlohmann::json with_tenant_header(nlohmann::json job, const HttpRequest& request, const std::string& field_prefix = "");

// The tenant a request acts for outside a job (webhook subscriptions): the token's
// pinned tenant, else the X-OJS-Tenant header, else "" (none: every tenant). A
// malformed header is a 400 on X-OJS-Tenant; a header naming another tenant than
// the token's pin is a 403 naming it.
std::string request_tenant(const HttpRequest& request);

// Batch PUSH: the header applies to every job of `jobs[]` (errors name jobs[i].meta.tenant_id).
nlohmann::json with_tenant_header_on_batch(nlohmann::json body, const HttpRequest& request);

}  // namespace ojs::broker
