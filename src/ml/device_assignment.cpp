#include "ojs/ml/device_assignment.hpp"

#include "ojs/ml/types.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace ojs::ml {
namespace {


bool peers(const GpuDevice& a, const GpuDevice& b) {
  // NVML reports links both ways; accept either direction so a one-sided list still works.
  return std::binary_search(a.nvlink_peers.begin(), a.nvlink_peers.end(), b.index) ||
         std::binary_search(b.nvlink_peers.begin(), b.nvlink_peers.end(), a.index);
}

// Depth-first search for `want` pairwise-peered devices, taking candidates in the
// given (preference) order so the first clique found is the preferred one. The
// step budget bounds the worst case on very large, sparse inventories.
bool find_clique(const std::vector<const GpuDevice*>& order, std::size_t want, std::size_t from,
                 std::vector<const GpuDevice*>& chosen, long& budget) {
  if (chosen.size() == want) return true;
  for (std::size_t i = from; i < order.size() && order.size() - i >= want - chosen.size(); ++i) {
    if (--budget < 0) return false;
    const GpuDevice* d = order[i];
    if (!std::all_of(chosen.begin(), chosen.end(), [&](const GpuDevice* c) { return peers(*c, *d); })) continue;
    chosen.push_back(d);
    if (find_clique(order, want, i + 1, chosen, budget)) return true;
    chosen.pop_back();
  }
  return false;
}

// Picks `want` devices from `order` (already in preference order): the first
// `want` ones, or the first NVLink clique when the job needs NVLink.
std::vector<const GpuDevice*> pick(const std::vector<const GpuDevice*>& order, std::size_t want, bool nvlink) {
  if (order.size() < want) return {};
  if (!nvlink) return {order.begin(), order.begin() + static_cast<long>(want)};
  std::vector<const GpuDevice*> chosen;
  long budget = 200'000;
  if (find_clique(order, want, 0, chosen, budget)) return chosen;
  return {};
}

}  // namespace

bool device_meets(const GpuDevice& d, const GpuRequirement& need) {
  if (d.is_mig() && need.count > 1) return false;
  if (!gpu_type_matches(need.type, d.type)) return false;
  if (need.memory_gb && d.memory_gb < *need.memory_gb) return false;
  if (need.min_compute_capability && (!d.compute_capability || *d.compute_capability < *need.min_compute_capability))
    return false;
  return true;
}

DeviceAssignment assign_devices(const std::vector<GpuDevice>& devices, const std::set<int>& busy,
                                const GpuRequirement& need, const AssignmentOptions& options) {
  DeviceAssignment out;
  if (need.count <= 0) return out;
  const auto want = static_cast<std::size_t>(need.count);

  int free_count = 0, unhealthy = 0;
  std::map<int, std::vector<const GpuDevice*>> by_numa;  // numa node -> matching free devices
  for (const auto& d : devices) {
    unhealthy += d.healthy ? 0 : 1;
    if (!d.healthy || busy.count(d.index)) continue;
    ++free_count;
    if (!device_meets(d, need)) continue;
    by_numa[d.numa_node].push_back(&d);
    ++out.free_matching;
  }
  const std::string needs = "job needs " + std::to_string(need.count);
  if (static_cast<std::size_t>(out.free_matching) < want) {
    out.refusal = "insufficient free GPUs: " + std::to_string(free_count) + " free";
    if (out.free_matching != free_count)
      out.refusal += " (" + std::to_string(out.free_matching) + " meet type/memory/compute capability)";
    out.refusal += ", " + needs;
    if (unhealthy > 0) out.refusal += " (" + std::to_string(unhealthy) + " unhealthy)";
    return out;
  }

  // Best fit: the smallest compute share first, then the smallest MIG device,
  // so a job that fits a 1g.10gb slice leaves bigger slices and whole GPUs free.
  for (auto& [numa, devs] : by_numa)
    std::stable_sort(devs.begin(), devs.end(), [](const GpuDevice* a, const GpuDevice* b) {
      const double a_mem = a->is_mig() ? a->memory_gb : 0, b_mem = b->is_mig() ? b->memory_gb : 0;
      return std::tie(a->compute_fraction, a_mem) < std::tie(b->compute_fraction, b_mem);
    });

  // NUMA nodes in policy order: pack fills the node with the fewest free GPUs
  // first (keeping whole nodes free for big jobs); spread the one with the most.
  std::vector<std::vector<const GpuDevice*>*> nodes;
  for (auto& [numa, devs] : by_numa) nodes.push_back(&devs);
  std::stable_sort(nodes.begin(), nodes.end(), [&](auto* a, auto* b) {
    return options.policy == PlacementPolicy::pack ? a->size() < b->size() : a->size() > b->size();
  });
  const bool nvlink = need.interconnect == Interconnect::nvlink && want > 1;

  std::vector<const GpuDevice*> chosen;
  for (auto* node : nodes)  // one NUMA node if any can hold the whole job
    if (chosen = pick(*node, want, nvlink); !chosen.empty()) break;
  if (chosen.empty()) {  // else across nodes, still in policy order
    std::vector<const GpuDevice*> all;
    for (auto* node : nodes) all.insert(all.end(), node->begin(), node->end());
    chosen = pick(all, want, nvlink);
  }
  if (chosen.empty()) {
    out.refusal = "no NVLink clique of " + std::to_string(need.count) + " among " + std::to_string(out.free_matching) +
                  " free GPUs";
    return out;
  }
  for (const auto* d : chosen) out.indices.push_back(d->index);
  std::sort(out.indices.begin(), out.indices.end());
  return out;
}

double memory_charge_gb(const GpuDevice& d, std::optional<double> declared_gb) {
  return declared_gb ? *declared_gb : d.memory_gb / std::max(1, d.max_jobs);
}

long long gpu_memory_mb(double gb) { return std::llround(gb * 1000.0); }

double gpu_memory_gb(long long mb) { return static_cast<double>(mb) / 1000.0; }

long long gpu_memory_charge_mb(const std::vector<GpuDevice>& devices, const std::vector<int>& assigned,
                               std::optional<double> declared_gb, int count) {
  if (assigned.empty()) return declared_gb ? gpu_memory_mb(*declared_gb * count) : 0;
  double gb = 0;
  for (const int index : assigned) {
    const auto d = std::find_if(devices.begin(), devices.end(), [&](const GpuDevice& g) { return g.index == index; });
    if (d == devices.end()) gb += declared_gb.value_or(0);
    else if (d->max_jobs > 1) gb += memory_charge_gb(*d, declared_gb);
    else gb += d->memory_gb > 0 ? d->memory_gb : declared_gb.value_or(0);  // a device that gives no size
  }
  return gpu_memory_mb(gb);
}

namespace {

// The memory the jobs on a shared device are charged (declared, or the device's
// fair share for a job that declares none).
double shared_memory_held_gb(const GpuDevice& d, const WorkerLoad& load) {
  auto at = [&](const auto& by_device) -> double {
    const auto it = by_device.find(d.index);
    return it == by_device.end() ? 0.0 : static_cast<double>(it->second);
  };
  return at(load.device_memory_gb) + at(load.device_undeclared) * memory_charge_gb(d, {});
}

// A shared device with a free job slot: the only kind a second job may join.
bool has_free_slot(const GpuDevice& d, const WorkerLoad& load) {
  const auto jobs = load.device_jobs.find(d.index);
  return d.max_jobs > 1 && jobs != load.device_jobs.end() && jobs->second < d.max_jobs &&
         !load.drained_devices.count(d.index);
}

// 1e-9: sums of decimal gigabytes (42.75 + 42.75) must not miss an exact fit.
bool memory_fits(const GpuDevice& d, double held_gb, const GpuRequirement& need) {
  return d.memory_gb <= 0 || held_gb + memory_charge_gb(d, need.memory_gb) <= d.memory_gb + 1e-9;
}

}  // namespace

std::set<int> unavailable_devices(const std::vector<GpuDevice>& devices, const WorkerLoad& load,
                                  const GpuRequirement& need) {
  std::set<int> out = load.busy_devices;
  for (const auto& d : devices)
    if (has_free_slot(d, load) && memory_fits(d, shared_memory_held_gb(d, load), need)) out.erase(d.index);
  out.insert(load.drained_devices.begin(), load.drained_devices.end());
  return out;
}

std::string shared_memory_shortfall(const std::vector<GpuDevice>& devices, const WorkerLoad& load,
                                    const GpuRequirement& need) {
  std::string out;
  int more = 0;
  for (const auto& d : devices) {
    if (!d.healthy || !has_free_slot(d, load) || !device_meets(d, need)) continue;
    const double held = shared_memory_held_gb(d, load);
    if (memory_fits(d, held, need)) continue;
    if (!out.empty()) {
      ++more;
      continue;
    }
    out = "device " + std::to_string(d.index) + " is shared (" + std::to_string(load.device_jobs.at(d.index)) + " of " +
          std::to_string(d.max_jobs) + " jobs) and has " + format_number(std::max(0.0, d.memory_gb - held)) + " of " +
          format_number(d.memory_gb) + " GB left, job needs " + format_number(memory_charge_gb(d, need.memory_gb)) + " GB";
  }
  if (more > 0) out += " (" + std::to_string(more) + " more such devices)";
  return out;
}

std::vector<std::string> visible_device_ids(const std::vector<GpuDevice>& devices, const std::vector<int>& assigned) {
  std::vector<std::string> out;
  for (const int index : assigned) {
    const auto d = std::find_if(devices.begin(), devices.end(), [&](const GpuDevice& g) { return g.index == index; });
    out.push_back(d != devices.end() && d->is_mig() && !d->uuid.empty() ? d->uuid : std::to_string(index));
  }
  return out;
}

}  // namespace ojs::ml
