#include "worker/agent/directives.hpp"

namespace ojs::worker {

namespace {

std::optional<WorkerDirective> parse_worker_directive(const std::string& text) {
  if (text == "running") return WorkerDirective::running;
  if (text == "quiet") return WorkerDirective::quiet;
  if (text == "terminate") return WorkerDirective::terminate;
  return std::nullopt;
}

}  // namespace

const char* to_string(WorkerDirective directive) {
  switch (directive) {
    case WorkerDirective::running: return "running";
    case WorkerDirective::quiet: return "quiet";
    case WorkerDirective::terminate: return "terminate";
  }
  return "running";
}

BrokerDirectives read_directives(const nlohmann::json& reply) {
  BrokerDirectives out;
  if (!reply.is_object()) return out;
  const std::string directive = reply.value("directive", std::string());
  // "" means "carry on as you are": then `state` says which state that is.
  out.worker = parse_worker_directive(directive.empty() ? reply.value("state", std::string()) : directive);
  const auto list = reply.find("job_directives");
  if (list == reply.end() || !list->is_array()) return out;
  for (const auto& entry : *list) {
    if (!entry.is_object() || !entry.contains("job_id") || !entry["job_id"].is_string()) continue;
    const std::string action = entry.value("action", "");
    if (action == "cancel" || action == "kill") {
      out.stops.push_back({entry["job_id"].get<std::string>(), action == "kill"});
      continue;
    }
    if (action != "preempt") continue;
    PreemptDirective preempt;
    preempt.job_id = entry["job_id"].get<std::string>();
    if (auto grace = entry.find("grace_period_s"); grace != entry.end() && grace->is_number())
      preempt.grace_period_s = grace->get<double>();
    preempt.checkpoint = entry.value("checkpoint", false);
    preempt.deadline = entry.value("deadline", "");
    out.preemptions.push_back(std::move(preempt));
  }
  return out;
}

}  // namespace ojs::worker
