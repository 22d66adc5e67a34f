// A JSON Schema that checks request bodies (valijson, draft 7 rules; our published
// schemas use no keyword whose meaning differs in 2020-12). The first error, the
// most specific one, becomes an OJS 400 naming the field, the rule and the JSON
// pointer: details {"field": "ml_limits.max_gpu_count", "rule": "...",
// "pointer": "/ml_limits/max_gpu_count"}.
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace ojs {

// A member name as one JSON Pointer token (RFC 6901: '~' as ~0, '/' as ~1).
std::string json_pointer_token(const std::string& name);

class JsonSchema {
 public:
  // `schema`: the schema document; throws std::runtime_error when it is not one.
  explicit JsonSchema(nlohmann::json schema);
  // A client's schema, prepared by prepare_client_schema (client_schema.hpp): its
  // "x-ojs-pattern" keywords run on BoundedPattern, within this thread's PatternBudget.
  static JsonSchema of_client(nlohmann::json prepared);
  ~JsonSchema();
  JsonSchema(JsonSchema&&) noexcept;

  // Throws OjsError invalid_request (invalid_field) on the first violation.
  // `field_prefix` is put before the field names ("rate_limit." for a member
  // checked on its own), and `pointer_prefix` before the pointers.
  void check(const nlohmann::json& document, const std::string& field_prefix = "", const std::string& pointer_prefix = "") const;

  // The schema of one property ("/properties/rate_limit"), as a schema of its own.
  JsonSchema at(const std::string& pointer) const;

  const nlohmann::json& document() const { return document_; }

 private:
  struct Compiled;
  JsonSchema(nlohmann::json schema, bool client);
  nlohmann::json document_;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace ojs
