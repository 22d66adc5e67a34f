// schema/queue-config.schema.json, compiled into the broker (broker/CMakeLists.txt
// generates the definition): the published schema is the one requests are checked
// against, so the two cannot drift apart.
#pragma once

namespace ojs::broker::governance {

const char* queue_config_schema_text();

}  // namespace ojs::broker::governance
