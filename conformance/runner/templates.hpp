// Template resolution for conformance cases.
//
//   "{{steps.step-1.response.body.job.id}}"   a value from an earlier step's response
//   "{{steps.step-1.response.status}}"        its HTTP status
//   "{{steps.step-1.response.headers.location}}"  a response header (lower-case name)
//   "{{ref.job_id}}" / "{{$ref.job_id}}" / "{{captures.job_id}}"  a stored value
//   "$ref.job_id"                              the same, dialect B style
//
// A string that is exactly one template resolves to the referenced value with
// its JSON type (an id string, a jobs array, a whole body object). Templates
// embedded in a longer string are spliced in as text (strings verbatim, other
// values as compact JSON); "$ref.name" inside a longer string is spliced too.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace ojs::conformance {

// Everything templates may refer to, kept as one JSON document:
//   {"steps": {"<id>": {"response": {"status": n, "headers": {...}, "body": ...}}},
//    "ref": {...stored values...}}
class Scope {
 public:
  Scope();
  void record_response(const std::string& step_id, long status, const std::map<std::string, std::string>& headers,
                       const nlohmann::json& body);
  void store(const std::string& name, const nlohmann::json& value);
  const nlohmann::json& document() const { return doc_; }

  // Looks an expression up ("steps.x.response.body.job.id", "ref.x", "$ref.x",
  // "captures.x", or a "$."-path into the document). nullptr when missing.
  const nlohmann::json* find(const std::string& expression) const;

 private:
  nlohmann::json doc_;
};

enum class Unresolved { Fail, Null };

struct ResolveOptions {
  Unresolved unresolved = Unresolved::Fail;  // Null: missing references become null
  bool literal_wrap = false;  // wrap whole-template values as {"$eq": value} (assertions:
                              // server data must never be read as a matcher)
};

// Returns `value` with every template replaced. Throws std::runtime_error naming
// the template when a reference cannot be resolved (Unresolved::Fail).
nlohmann::json resolve(const nlohmann::json& value, const Scope& scope, ResolveOptions options = {});

}  // namespace ojs::conformance
