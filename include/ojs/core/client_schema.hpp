// A JSON Schema a client registers (the schema registry) as the validator may run
// it: valijson applies draft 7 rules, on a fiber's stack, in the request's time.
// The document is checked and rewritten so that what it checks is what it says
// (2020-12's prefixItems and dependent* become their draft 7 forms; a keyword it
// cannot honour is refused, never ignored) and so that no document it checks can
// take unbounded time or stack (patterns run on BoundedPattern, no reference
// loops, short chains of schemas applied to one value).
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace ojs {

inline constexpr std::size_t kMaxClientSchemaBytes = 64 * 1024;  // serialized
inline constexpr int kMaxSchemaChain = 8;  // schemas applied to one value in a row ($ref, allOf, ...)

// The document valijson compiles: patterns under "x-ojs-pattern", `format` kept as
// an annotation ("x-ojs-format", 2020-12's default: not asserted), root `$schema`
// and `$id` dropped. Throws OjsError invalid_request naming `field` (and the JSON
// pointer under `pointer`) and the rule broken.
nlohmann::json prepare_client_schema(const nlohmann::json& schema, const std::string& field, const std::string& pointer);

}  // namespace ojs
