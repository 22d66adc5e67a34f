// What the broker asks of the worker, read from heartbeat and FETCH replies.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ojs::worker {

enum class WorkerDirective { running, quiet, terminate };

struct PreemptDirective {
  std::string job_id;
  double grace_period_s = 30;
  bool checkpoint = false;
  std::string deadline;  // RFC 3339, informational: the grace is timed locally (no clock skew)
};

struct BrokerDirectives {
  std::optional<WorkerDirective> worker;  // absent when the reply says nothing
  std::vector<PreemptDirective> preemptions;
};

// Reads `directive` (falling back to `state`) and `job_directives[]`; ignores
// what it does not understand so newer brokers can add actions.
BrokerDirectives read_directives(const nlohmann::json& reply);

const char* to_string(WorkerDirective directive);

}  // namespace ojs::worker
