#include "broker/schemas/args_check.hpp"

#include <spdlog/spdlog.h>

#include "broker/schemas/registered_schema.hpp"
#include "ojs/core/bounded_pattern.hpp"
#include "ojs/core/client_schema.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::schemas {

std::shared_ptr<const ArgsCheck::Cached> ArgsCheck::versions_of(const std::string& tenant, const std::string& job_type) {
  const auto key = tenant + "/" + job_type;
  const auto now = now_ms();
  {
    std::lock_guard lock(mutex_);
    if (const auto found = cache_.find(key); found != cache_.end() && now - found->second->read_ms < kCacheMs) return found->second;
  }
  auto fresh = std::make_shared<Cached>();
  fresh->read_ms = now;
  for (auto& registered : registered_versions(store_, tenant, job_type)) {
    try {
      fresh->versions.push_back(
          {registered.version, std::make_shared<const JsonSchema>(JsonSchema::of_client(prepare_client_schema(registered.schema, "schema", "/schema")))});
    } catch (const std::exception& e) {  // registered under other rules: checked by none
      spdlog::warn("schema {}@{} is not applied: {}", job_type, registered.version.text, e.what());
    }
  }
  std::lock_guard lock(mutex_);
  if (cache_.size() >= kMaxCachedTypes) cache_.clear();  // many types pushed: start over rather than grow
  cache_[key] = fresh;
  return fresh;
}

void ArgsCheck::forget(const std::string& tenant, const std::string& job_type) {
  std::lock_guard lock(mutex_);
  cache_.erase(tenant + "/" + job_type);
}

std::vector<std::string> ArgsCheck::check(const NewJob& job, const std::string& tenant) {
  if (mode_ == "off") return {};
  auto cached = versions_of(tenant, job.type);
  if (cached->versions.empty() && !tenant.empty()) cached = versions_of("", job.type);  // the untenanted schemas apply to all
  if (cached->versions.empty()) return {};
  const Compiled* applies = &cached->versions.front();  // unversioned: the latest
  if (const auto version = job_version(job.document)) {
    applies = nullptr;
    for (const auto& v : cached->versions)
      if (compare(v.version, *version) == 0) applies = &v;
    if (!applies) return {};  // no schema for that version: nothing to check it against
  }
  const nlohmann::json args = job.document.value("args", nlohmann::json::array());
  try {
    PatternBudget budget(kPatternBudget);
    applies->schema->check(args, "args", "/args");
    return {};
  } catch (const OjsError& e) {
    const std::string message =
        "Job arguments do not match schema for " + job.type + "@" + applies->version.text + ": " + e.what();
    if (mode_ == "strict") {
      auto details = e.details();
      details["job_type"] = job.type;
      details["version"] = applies->version.to_json();
      details["validation_errors"] = nlohmann::json::array({e.what()});
      throw OjsError(ErrorCode::validation_error, message, details);
    }
    spdlog::warn("job {}: {}", job.id, message);
    return {"Schema validation warning: " + message};
  }
}

}  // namespace ojs::broker::schemas
