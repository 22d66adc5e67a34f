#include "broker/scheduling/scheduler.hpp"

#include <nlohmann/json.hpp>

namespace ojs::broker {

struct Scheduler::Impl {};

Scheduler::Scheduler() : impl_(std::make_unique<Impl>()) {}
Scheduler::~Scheduler() = default;

double rank_base(int priority_class_rank, int priority) {
  constexpr double kBand = 1099511627776.0;  // 2^40
  const int band = (2 - priority_class_rank) * 201 + (100 - priority);
  return band * kBand;
}

JobClassification Scheduler::classify(const nlohmann::json&, int priority) const {
  return {"default", "{}", rank_base(1, priority)};
}

std::vector<EligibleClass> Scheduler::eligible(const std::string&, const ClassSet& classes, const WorkerView&) const {
  std::vector<EligibleClass> out;
  for (const auto& [id, _] : classes.classes) out.push_back({id, 0, 0});
  return out;
}

}  // namespace ojs::broker
