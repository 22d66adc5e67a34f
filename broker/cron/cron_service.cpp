#include "broker/cron/cron_service.hpp"

#include <spdlog/spdlog.h>

#include <regex>

#include "broker/cron/cron_expression.hpp"
#include "broker/preemption/preemption.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs::broker {

using nlohmann::json;

namespace {

const std::regex kName("^[a-z0-9][a-z0-9.-]{0,254}$");

OjsError cron_not_found(const std::string& name) {
  return OjsError(ErrorCode::not_found, "cron " + name + " not found", {{"cron_name", name}});
}

std::optional<std::int64_t> to_ms(const std::map<std::string, std::string>& state, const char* field) {
  const auto it = state.find(field);
  if (it == state.end() || it->second.empty()) return std::nullopt;
  try {
    return std::stoll(it->second);
  } catch (...) {
    return std::nullopt;
  }
}

// The job a tick enqueues, as a PUSH body: job_template, or the spec's top-level fields.
json job_body(const json& definition) {
  if (definition.contains("job_template")) return definition["job_template"];
  json body = {{"type", definition.value("type", "")}, {"args", definition.value("args", json::array())}};
  if (definition.contains("options")) body["options"] = definition["options"];
  return body;
}

std::shared_ptr<const cron::TimeZone> zone_of(const json& definition) {
  return cron::TimeZone::load(definition.value("timezone", "UTC"));
}

}  // namespace

CronService::CronService(PushService& push, JobService& jobs, CronStore store, std::int64_t tick_interval_ms, CronLimits limits)
    : push_(push),
      jobs_(jobs),
      store_(store),
      owner_(make_uuidv7()),
      lease_ms_(std::max<std::int64_t>(2000, 3 * tick_interval_ms)),
      limits_(limits) {}

json CronService::put(const json& body, const std::string& scope, const std::string& identity) {
  if (!body.is_object()) throw invalid_field("$", "request body must be a JSON object");
  if (!body.contains("name") || !body["name"].is_string() || !std::regex_match(body["name"].get<std::string>(), kName))
    throw invalid_field("name", "must match ^[a-z0-9][a-z0-9.-]*$ (at most 255 characters)");
  const auto name = body["name"].get<std::string>();
  const char* expr_field = body.contains("cron") ? "cron" : "expression";
  if (!body.contains(expr_field) || !body[expr_field].is_string()) throw invalid_field("cron", "is required: a cron expression such as \"0 9 * * *\"");
  const auto text = body[expr_field].get<std::string>();
  // Parsed again on every tick: a 2 MB expression once cost half a core.
  if (text.size() > kMaxCronExpressionLength)
    throw invalid_field(expr_field, "must be at most " + std::to_string(kMaxCronExpressionLength) + " characters");
  std::optional<cron::CronExpression> expression;
  try {
    expression = cron::CronExpression::parse(text);
  } catch (const std::invalid_argument& e) {
    throw invalid_field(expr_field, std::string("invalid cron expression: ") + e.what());
  }
  json def = json::object();
  for (const char* f : {"name", "description", "job_template", "type", "args", "options", "overlap_policy", "enabled", "timezone"})
    if (body.contains(f)) def[f] = body[f];
  def["expression"] = text;
  def["timezone"] = body.value("timezone", "UTC");
  if (!def["timezone"].is_string() || !zone_of(def)) throw invalid_field("timezone", "must be an IANA time zone name such as \"America/New_York\"");
  def["overlap_policy"] = body.value("overlap_policy", "skip");
  const auto overlap = def["overlap_policy"];
  if (!overlap.is_string() || (overlap != "skip" && overlap != "allow" && overlap != "enqueue" && overlap != "cancel_previous"))
    throw invalid_field("overlap_policy", "must be skip, allow, cancel_previous or enqueue");
  if (def.contains("enabled") && !def["enabled"].is_boolean()) throw invalid_field("enabled", "must be a boolean");
  def["enabled"] = def.value("enabled", true);
  if (def.contains("job_template") && !def["job_template"].is_object()) throw invalid_field("job_template", "must be an object");
  // The job must be a valid PUSH now, not at 3 a.m.; its tenant (the caller's, or
  // meta.tenant_id when the caller may name one) is the tenant of every tick.
  std::string tenant;
  try {
    const auto prepared = push_.prepare(job_body(def));
    for (const auto& [field, value] : prepared.fields)
      if (field == "tenant") tenant = value;
  } catch (const OjsError& e) {
    throw under_field(def.contains("job_template") ? "job_template." : "", e);
  }
  def["registered_by"] = identity;  // its ticks take this identity's PUSH tokens
  const auto existing = in_scope(name, scope);
  def["created_at"] = existing ? json::parse(existing->definition).value("created_at", format_rfc3339(now_ms())) : format_rfc3339(now_ms());
  std::optional<std::int64_t> next;
  if (def["enabled"].get<bool>()) next = expression->next_after(now_ms(), *zone_of(def));
  const auto put = store_.put(name, def.dump(), next, tenant, scope, limits_.max_crons, limits_.max_crons_per_tenant);
  if (put.status == CronPut::Status::forbidden)
    throw OjsError(ErrorCode::conflict, "cron name " + name + " is taken; choose another name",
                   {{"field", "name"}, {"rule", "must not name another tenant's cron"}});
  if (put.status == CronPut::Status::limit)
    throw OjsError(ErrorCode::validation_error,
                   "broker bound " + put.limit + ": " + std::to_string(put.max) + " crons exist" +
                       (put.limit == "max_crons_per_tenant" ? " for tenant '" + tenant + "'" : std::string()) +
                       "; delete one or replace one by its name",
                   {{"field", "name"}, {"limit", put.limit}, {"max", put.max}});
  return view(name, put.record);
}

// A cron outside the caller's scope is as absent as a missing one.
std::optional<CronRecord> CronService::in_scope(const std::string& name, const std::string& scope) {
  auto record = store_.get(name);
  if (record && !scope.empty() && record->tenant != scope) return std::nullopt;
  return record;
}

json CronService::view(const std::string& name, const CronRecord& record) {
  json out = json::parse(record.definition, nullptr, false);
  if (!out.is_object()) out = json::object();
  out["name"] = name;
  out["cron"] = out.value("expression", "");
  // The admin dashboard's names: id, schedule, and the job's type and queue.
  out["id"] = name;
  out["schedule"] = out["cron"];
  const json body = job_body(out);
  out["type"] = body.value("type", "");
  const json options = body.value("options", json::object());
  out["queue"] = options.is_object() ? options.value("queue", "default") : "default";
  if (!out.contains("created_at")) out["created_at"] = nullptr;
  const auto next = to_ms(record.state, "next_run_at");
  const auto last = to_ms(record.state, "last_run_at");
  out["next_run_at"] = next ? json(format_rfc3339(*next)) : json(nullptr);
  out["last_run_at"] = last ? json(format_rfc3339(*last)) : json(nullptr);
  out["run_count"] = to_ms(record.state, "run_count").value_or(0);
  out["deferred_runs"] = deferred_ticks(record).size();  // enqueue policy: occurrences waiting for the previous run
  if (!record.tenant.empty()) out["tenant"] = record.tenant;
  return out;
}

json CronService::get(const std::string& name, const std::string& scope) {
  auto record = in_scope(name, scope);
  if (!record) throw cron_not_found(name);
  return view(name, *record);
}

json CronService::list(const std::string& scope) {
  json crons = json::array();
  for (const auto& [name, record] : store_.list(scope)) crons.push_back(view(name, record));
  return {{"crons", crons}};
}

json CronService::remove(const std::string& name, const std::string& scope) {
  auto record = in_scope(name, scope);
  if (!record || !store_.remove(name, scope)) throw cron_not_found(name);
  return view(name, *record);
}

BatchJob CronService::tick_job(const std::string& name, const json& definition, const std::string& tenant, std::int64_t tick_ms) {
  json body = job_body(definition);
  if (!body.contains("meta") || !body["meta"].is_object()) body["meta"] = json::object();
  if (!tenant.empty()) body["meta"]["tenant_id"] = tenant;  // quotas, fair share and the owner's view read it
  body["meta"]["cron_name"] = name;
  body["meta"]["cron_triggered_at"] = format_rfc3339(tick_ms);
  PreparedJob prepared = push_.prepare(body);
  BatchJob row = store_record(prepared);  // with its scheduling indexes, written by cron_fire.lua
  row.scheduled_at_ms.reset();
  return row;
}

void CronService::fire(const std::string& name, const json& definition, const CronRecord& record, std::int64_t tick_ms,
                       std::int64_t now) {
  const auto zone = zone_of(definition);
  const auto expression = cron::CronExpression::parse(definition.value("expression", ""));
  // The following tick counts from now: occurrences missed while no broker ran are not replayed.
  const auto following = expression.next_after(std::max(tick_ms, now), *zone);
  const auto policy = definition.value("overlap_policy", "skip");
  // cancel_previous: the run this tick's snapshot names as the last one is cancelled
  // first (a no-op when it has finished meanwhile), then the tick enqueues as allow.
  if (policy == "cancel_previous") cancel_previous_run(name, record);
  // No following tick within five years: park the cron far ahead rather than spin.
  const auto result = store_.fire(name, tick_ms, following.value_or(tick_ms + 5LL * 366 * 86400000), policy,
                                  tick_job(name, definition, record.tenant, tick_ms));
  if (result == CronFire::skipped) spdlog::info("cron {}: tick skipped, the previous run is still active", name);
  if (result == CronFire::deferred) {
    const auto waiting = deferred_ticks(record).size() + 1;
    if (waiting > 2) spdlog::warn("cron {}: {} occurrences wait for the previous run to finish (overlap_policy enqueue)", name, waiting);
  }
}

std::vector<std::int64_t> CronService::deferred_ticks(const CronRecord& record) {
  std::vector<std::int64_t> out;
  const auto it = record.state.find("deferred");
  if (it == record.state.end()) return out;
  std::size_t start = 0;
  while (start < it->second.size()) {
    auto comma = it->second.find(',', start);
    if (comma == std::string::npos) comma = it->second.size();
    try {
      out.push_back(std::stoll(it->second.substr(start, comma - start)));
    } catch (...) {
    }
    start = comma + 1;
  }
  return out;
}

void CronService::cancel_previous_run(const std::string& name, const CronRecord& record) {
  const auto it = record.state.find("last_job");
  if (it == record.state.end()) return;
  const auto space = it->second.find(' ');
  if (space == std::string::npos) return;
  const auto id = it->second.substr(space + 1);
  try {
    jobs_.cancel(id);
    spdlog::info("cron {}: cancelled the previous run {} (overlap_policy cancel_previous)", name, id);
  } catch (const OjsError&) {
    // Finished (or gone) meanwhile: nothing to cancel.
  }
}

// A tick that will enqueue takes a PUSH token of whoever registered the cron; one
// the overlap policy skips or defers does not (the previous run read just before;
// cron_fire.lua decides on the same state).
bool CronService::tick_admitted(const std::string& name, const json& definition, const CronRecord& record, bool deferred_turn) {
  if (!admit_tick_) return true;
  const auto policy = definition.value("overlap_policy", "skip");
  if (!deferred_turn && (policy == "skip" || policy == "enqueue")) {
    if (!store_.previous_run_finished(name)) return true;            // skipped or deferred
    if (policy == "enqueue" && !deferred_ticks(record).empty()) return true;  // deferred behind the others
  }
  const auto who = definition.value("registered_by", std::string());
  if (admit_tick_(who)) return true;
  spdlog::info("cron {}: tick waits, {} is over its PUSH rate", name, who);
  return false;
}

// enqueue policy: the oldest deferred occurrence runs once the previous run has finished.
void CronService::fire_deferred(const std::string& name) {
  const auto record = store_.get(name);
  if (!record) return;
  const auto deferred = deferred_ticks(*record);
  if (deferred.empty() || !store_.previous_run_finished(name)) return;  // not its turn yet: no token, no job prepared
  try {
    const json definition = json::parse(record->definition);
    if (definition.value("enabled", true) && tick_admitted(name, definition, *record, true))
      store_.fire_deferred(name, deferred.front(), tick_job(name, definition, record->tenant, deferred.front()));
  } catch (const std::exception& e) {
    spdlog::warn("cron {}: deferred tick at {} failed: {}", name, format_rfc3339(deferred.front()), e.what());
  }
}

void CronService::run_once() {
  if (!store_.lead(owner_, lease_ms_)) return;
  if (!indexed_) {
    store_.index_all();
    indexed_ = true;
  }
  const auto now = now_ms();
  const auto crons = store_.to_tick(now, kMaxTicksPerPass);
  for (const auto& name : crons.deferred) fire_deferred(name);
  for (const auto& name : crons.due) {
    const auto record = store_.get(name);
    if (!record) {  // removed meanwhile
      store_.reindex(name, std::nullopt);
      continue;
    }
    const auto tick = to_ms(record->state, "next_run_at");
    if (!tick || *tick > now) {  // the index was behind the cron's state: repair it
      store_.reindex(name, tick);
      continue;
    }
    try {
      const json definition = json::parse(record->definition);
      if (!definition.value("enabled", true) || !tick_admitted(name, definition, *record, false)) continue;
      fire(name, definition, *record, *tick, now);
    } catch (const std::exception& e) {
      spdlog::warn("cron {}: tick at {} failed: {}", name, format_rfc3339(*tick), e.what());
    }
  }
}

}  // namespace ojs::broker
