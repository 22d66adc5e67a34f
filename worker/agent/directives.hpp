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

// The job was cancelled while it ran: cancel is SIGTERM, the job's grace, SIGKILL;
// kill is SIGKILL now. Told on every contact until the worker reports the process
// gone (its NACK), so the broker places nothing on its devices before that.
struct StopDirective {
  std::string job_id;
  bool kill = false;
};

struct BrokerDirectives {
  std::optional<WorkerDirective> worker;  // absent when the reply says nothing
  std::vector<PreemptDirective> preemptions;
  std::vector<StopDirective> stops;
};

// Reads `directive` (falling back to `state`) and `job_directives[]`; ignores
// what it does not understand so newer brokers can add actions.
BrokerDirectives read_directives(const nlohmann::json& reply);

const char* to_string(WorkerDirective directive);

}  // namespace ojs::worker
