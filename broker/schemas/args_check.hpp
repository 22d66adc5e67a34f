// PUSH's check of a job's args against its type's registered schema
// (ojs-schema-registry.md §5.2, §7; ojs-job-versioning.md §6.2): the job's
// `version` names the schema, an unversioned job is checked against the latest.
// The schemas are those of the job's tenant, else (none for the type) the
// untenanted ones: an operator's schema applies to every tenant without its own.
// The mode (--schema-validation) decides what a mismatch does: strict refuses the
// job (422 naming the field and the rule), warn accepts it with a warning, off
// checks nothing. Each broker keeps the compiled schemas of a type for a second:
// a PUSH costs no round trip for them, a change made through another broker
// applies within that second.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "broker/schemas/schema_version.hpp"
#include "broker/store/schema_store.hpp"
#include "ojs/core/envelope.hpp"
#include "ojs/core/json_schema.hpp"

namespace ojs::broker::schemas {

class ArgsCheck {
 public:
  ArgsCheck(SchemaStore& store, std::string mode) : store_(store), mode_(std::move(mode)) {}

  // The warnings to answer with the job (warn mode); throws OjsError 422 validation_error (strict).
  std::vector<std::string> check(const NewJob& job, const std::string& tenant);
  // This broker changed the type's schemas: read them afresh at the next PUSH.
  void forget(const std::string& tenant, const std::string& job_type);

  static constexpr std::int64_t kCacheMs = 1000;
  static constexpr std::size_t kMaxCachedTypes = 10000;
  static constexpr std::size_t kPatternBudget = 20'000'000;  // text characters x pattern states, per job

 private:
  struct Compiled {
    SchemaVersion version;
    std::shared_ptr<const JsonSchema> schema;
  };
  struct Cached {
    std::int64_t read_ms = 0;
    std::vector<Compiled> versions;  // newest first
  };
  std::shared_ptr<const Cached> versions_of(const std::string& tenant, const std::string& job_type);

  SchemaStore& store_;
  const std::string mode_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Cached>> cache_;  // "tenant/type"
};

}  // namespace ojs::broker::schemas
