// The matcher engine: how an expected value written in a conformance case is
// compared with what the server returned. Pure functions, no I/O.
//
// An expected value is compiled once into a Matcher tree (compile() throws
// std::invalid_argument on a malformed matcher, which is how `--list` validates
// case files), then applied to the actual value (nullptr when it is absent).
//
//   literal scalars            equality (numbers compare by value: 1 == 1.0)
//   literal arrays             same length, element-wise match
//   literal objects            ObjectMode::Exact: same key set (keys whose matcher
//                              accepts absence, e.g. "absent", may be missing);
//                              ObjectMode::Partial: every expected key matches,
//                              extra actual keys are fine
//   matcher strings            "string:uuidv7", "number:range(a,b)", "absent", ...
//   operator objects           {"$exists":true,"$type":"string"}, {"$in":[...]}, ...
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace ojs::conformance {

struct MatchResult {
  bool ok = true;
  std::string where;  // location inside the compared value, e.g. ".args[0]"
  std::string why;    // "expected X, got Y"

  static MatchResult pass() { return {}; }
  static MatchResult fail(std::string why) { return {false, {}, std::move(why)}; }
  MatchResult& at(const std::string& prefix) {
    where = prefix + where;
    return *this;
  }
  explicit operator bool() const { return ok; }
  std::string message() const { return where.empty() ? why : "at " + where + ": " + why; }
};

enum class ObjectMode { Exact, Partial };

class Matcher {
 public:
  virtual ~Matcher() = default;
  virtual MatchResult match(const nlohmann::json* actual) const = 0;
  virtual std::string describe() const = 0;
};
using MatcherPtr = std::shared_ptr<const Matcher>;

MatcherPtr compile(const nlohmann::json& expected, ObjectMode mode = ObjectMode::Exact);

// Convenience: compile and apply in one call.
MatchResult match_value(const nlohmann::json* actual, const nlohmann::json& expected,
                        ObjectMode mode = ObjectMode::Exact);

// True when `text` is written in matcher syntax ("absent", "string:...", ...).
bool is_matcher_string(std::string_view text);

// Short rendering of an actual value for messages ("<absent>" for nullptr).
std::string show(const nlohmann::json* value);

// Status assertion: a number, a matcher string or an operator object.
MatchResult check_status(const nlohmann::json& expected, long status);

// Header assertions {"Name": expected}. Names compare case-insensitively
// (`headers` must have lower-case names, as ojs::HttpResponse has). A literal
// compares the part before any ';' parameters (the media type of a
// Content-Type, charset ignored), trimmed and case-insensitively.
MatchResult check_headers(const nlohmann::json& expected, const std::map<std::string, std::string>& headers);

// Dialect A body assertions: {"$.path": expected, ..., "$or": [{...}, ...],
// "$empty": bool}. `body` is the parsed response (nullptr when the body was
// empty or not JSON); `raw_body` is what came over the wire.
MatchResult check_body_assertions(const nlohmann::json& assertions, const nlohmann::json* body,
                                  std::string_view raw_body);

// Dialect B job unwrapping: the object a body pattern (and a `store` path) is
// applied to. When the response is {"job": {...}} and the pattern has no "job"
// key, that is the job object; when it is {"jobs": [...]} and the pattern has
// no "jobs" key, it is the first job (nullptr if the list is empty); otherwise
// it is the whole body.
const nlohmann::json* unwrap_job(const nlohmann::json& body, const nlohmann::json& pattern);

// Dialect B `expect.body`: a partial deep match after unwrap_job. A pattern
// whose keys are all JSON paths ("$.x") or "$or"/"$empty" is evaluated as
// Dialect A body assertions instead.
MatchResult check_body_pattern(const nlohmann::json& pattern, const nlohmann::json* body, std::string_view raw_body);

// ASSERT exclusive_claim, with templates already resolved (a fetch that returned
// no body resolves to null): {job_id, fetches: [jobs arrays], exactly_one_has_job,
// exactly_one_empty}. A fetch "has the job" when its jobs array contains an
// object whose id is job_id; it is "empty" when it is null or an empty array.
MatchResult check_exclusive_claim(const nlohmann::json& spec);

// Throws std::invalid_argument when assertions/patterns contain malformed
// matchers or paths (used by --list and at load time).
void validate_body_assertions(const nlohmann::json& assertions);
void validate_body_pattern(const nlohmann::json& pattern);

}  // namespace ojs::conformance
