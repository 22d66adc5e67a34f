// The schema registry (ojs-schema-registry.md §10, ojs-job-versioning.md §11).
#pragma once
#include "broker/api/api.hpp"

namespace ojs::broker {

namespace schemas {
class SchemaRegistry;
}
void register_schemas_api(Router& router, schemas::SchemaRegistry& registry);

}  // namespace ojs::broker
