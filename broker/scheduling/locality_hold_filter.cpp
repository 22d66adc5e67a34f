#include "broker/scheduling/locality_hold_filter.hpp"

#include <variant>

namespace ojs::broker {
namespace {

double fact(const ml::Refusal& r, const std::string& name) {
  for (const auto& [k, v] : r.facts)
    if (k == name)
      if (const double* d = std::get_if<double>(&v)) return *d;
  return 0;
}

}  // namespace

ml::Refusal locality_hold_refusal(const std::string& model_id, bool cold, const std::string& better_worker,
                                  std::int64_t delay_ms, std::int64_t now_ms) {
  ml::Refusal r;
  r.predicate = "locality_hold";
  r.code = ml::VerdictCode::held;
  const std::string delay = std::to_string(delay_ms) + " ms (--locality-delay-ms)";
  if (cold) {
    r.reason = "lacks the preferred model " + model_id + ": holds jobs younger than " + delay + " for a worker that has it";
    r.summary = "hold jobs for a worker with model " + model_id + " loaded (locality delay)";
    r.facts = {{"model_id", model_id}};
  } else {
    r.reason = "worker " + better_worker + " suits the class better: holds jobs younger than " + delay + " for it";
    r.summary = "hold jobs for a better-suited worker (locality delay)";
    r.facts = {{"better_worker", better_worker}};
  }
  r.facts.emplace_back("delay_ms", static_cast<double>(delay_ms));
  r.facts.emplace_back("at_ms", static_cast<double>(now_ms));
  return r;
}

bool hold_applies(const ml::Refusal& hold, std::int64_t enqueued_ms, std::int64_t now_ms) {
  if (enqueued_ms <= 0) enqueued_ms = static_cast<std::int64_t>(fact(hold, "at_ms"));
  return enqueued_ms + static_cast<std::int64_t>(fact(hold, "delay_ms")) > now_ms;
}

}  // namespace ojs::broker
