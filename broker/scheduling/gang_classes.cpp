#include "broker/scheduling/gang_classes.hpp"

namespace ojs::broker {

GangClaimClasses gang_claim_classes(const std::vector<ClassVerdict>& verdicts, const Scheduler& scheduler, const ClassSet& classes,
                                    const ml::Capabilities& caps) {
  GangClaimClasses out;
  for (const auto& v : verdicts) {
    if (!v.judgement.eligible()) continue;
    const auto& gang = scheduler.requirements(v.class_id, classes.classes.at(v.class_id)).hard.gang;
    std::string label;
    if (!gang.same_label.empty())
      if (auto it = caps.labels.find(gang.same_label); it != caps.labels.end()) label = it->second;
    out.eligible.push_back({v.class_id, v.claim.gpus, v.claim.gpu_memory_mb, v.claim.devices_json, label});
    if (gang.elastic()) out.elastic.insert(v.class_id);
  }
  return out;
}

}  // namespace ojs::broker
