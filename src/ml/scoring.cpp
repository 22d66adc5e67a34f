#include "ojs/ml/scoring.hpp"

#include <algorithm>

#include "ojs/ml/affinity.hpp"

namespace ojs::ml {
namespace {

int free_gpu_count(const Capabilities& caps, const WorkerLoad* load) {
  if (!caps.devices.empty()) {
    int n = 0;
    for (const auto& d : caps.devices) n += d.healthy && !(load && load->busy_devices.count(d.index));
    return n;
  }
  return std::max(0, caps.gpu.count - (load ? load->gpus_in_use() : 0));
}

void explain(std::string& out, const std::string& part) { out += (out.empty() ? "" : "; ") + part; }

}  // namespace

Score score(const Requirements& req, const Capabilities& caps, const WorkerLoad* load, const ScoringOptions& options) {
  Score s;
  const auto note = [&](const auto& text) {  // text(): built only when asked for
    if (options.explain) explain(s.explanation, text());
  };
  for (const auto& rule : req.soft.preferred_affinity) {
    if (!rule_matches(rule, caps.labels)) continue;
    s.affinity += rule.weight;
    note([&] { return "affinity +" + std::to_string(rule.weight) + " (" + describe(rule) + ")"; });
  }
  const auto& model = req.soft.locality_model_id;
  if (!model.empty() && caps.has_model(model)) {
    s.locality = options.locality_bonus;
    note([&] { return "locality +" + format_number(s.locality) + " (" + model + " loaded)"; });
  }
  // Best fit: a job that uses all of a worker's free GPUs scores the full weight,
  // so small jobs leave big machines to big jobs. GPU-less jobs prefer GPU-less workers.
  const int need = req.hard.gpu.count;
  const int free = free_gpu_count(caps, load);
  if (need > 0 && free >= need) {
    s.packing = options.packing_weight * need / free;
    note([&] {
      return "packing +" + format_number(s.packing) + " (" + std::to_string(need) + " of " + std::to_string(free) + " free GPUs)";
    });
  } else if (need == 0 && caps.gpu.count == 0) {
    s.packing = options.packing_weight;
    note([&] { return "packing +" + format_number(s.packing) + " (no GPU left idle)"; });
  }
  s.total = s.affinity + s.locality + s.packing;
  if (options.explain && s.explanation.empty()) s.explanation = "no preference applies";
  return s;
}

bool locality_hold(const Requirements& req, const Capabilities* caps, std::int64_t waited_ms,
                   const ScoringOptions& options) {
  const auto& model = req.soft.locality_model_id;
  if (model.empty() || (caps && caps->has_model(model))) return false;
  return waited_ms < options.locality_delay_ms;
}

}  // namespace ojs::ml
