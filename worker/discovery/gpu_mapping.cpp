#include "worker/discovery/gpu_mapping.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

namespace ojs::worker {

namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::vector<std::string> name_tokens(std::string_view name) {
  std::vector<std::string> tokens;
  std::string current;
  for (const char c : lowercase(name)) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      current += c;
    } else if (!current.empty()) {
      tokens.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) tokens.push_back(std::move(current));
  return tokens;
}

// Name tokens that identify a model, with the id suffix they map to. Variants
// (MI250X, GH200 is its own product) fold into the well-known ids of the schema.
const std::map<std::string, std::string>& known_model_tokens() {
  static const std::map<std::string, std::string> tokens = {
      {"b200", "b200"},     {"gb200", "gb200"},   {"b100", "b100"},   {"h200", "h200"},   {"gh200", "gh200"},
      {"h100", "h100"},     {"h800", "h800"},     {"a100", "a100"},   {"a800", "a800"},   {"a10g", "a10g"},
      {"a10", "a10"},       {"a30", "a30"},       {"a40", "a40"},     {"l40s", "l40s"},   {"l40", "l40"},
      {"l4", "l4"},         {"t4", "t4"},         {"v100", "v100"},   {"v100s", "v100"},  {"p100", "p100"},
      {"mi300x", "mi300x"}, {"mi300a", "mi300a"}, {"mi325x", "mi325x"}, {"mi250x", "mi250"}, {"mi250", "mi250"},
      {"mi210", "mi210"},   {"mi100", "mi100"},
  };
  return tokens;
}

bool is_vendor_word(const std::string& token) {
  return token == "nvidia" || token == "tesla" || token == "amd" || token == "instinct" || token == "geforce" ||
         token == "radeon";
}

std::string compute_capability_string(const RecordedGpu& gpu) {
  return std::to_string(gpu.cuda_compute_capability[0]) + "." + std::to_string(gpu.cuda_compute_capability[1]);
}

// Peers reachable over NVLink: direct GPU-to-GPU links, plus every other GPU
// on the same NVSwitch fabric (DGX/HGX boards link GPUs only to switches).
std::vector<std::set<unsigned>> nvlink_peers(const RecordedGpuInventory& inventory) {
  std::map<std::string, unsigned> index_by_bus;
  for (const auto& gpu : inventory.gpus) index_by_bus[canonical_pci_bus_id(gpu.pci_bus_id)] = gpu.index;
  std::vector<std::set<unsigned>> peers(inventory.gpus.size());
  std::vector<bool> on_switch(inventory.gpus.size(), false);
  for (std::size_t i = 0; i < inventory.gpus.size(); ++i) {
    for (const auto& link : inventory.gpus[i].nvlinks) {
      if (!link.active) continue;
      if (link.remote_device_type == "switch") {
        on_switch[i] = true;
        continue;
      }
      const auto remote = index_by_bus.find(canonical_pci_bus_id(link.remote_pci_bus_id));
      if (remote != index_by_bus.end() && remote->second != inventory.gpus[i].index) peers[i].insert(remote->second);
    }
  }
  for (std::size_t i = 0; i < inventory.gpus.size(); ++i)
    for (std::size_t j = 0; j < inventory.gpus.size(); ++j)
      if (i != j && on_switch[i] && on_switch[j]) peers[i].insert(inventory.gpus[j].index);
  return peers;
}

bool cc_less(const RecordedGpu& a, const RecordedGpu& b) {
  return a.cuda_compute_capability < b.cuda_compute_capability;  // lexicographic: (major, minor)
}

}  // namespace

std::string gpu_type_id(std::string_view marketing_name) {
  const auto tokens = name_tokens(marketing_name);
  const bool amd = std::any_of(tokens.begin(), tokens.end(),
                               [](const std::string& t) { return t == "amd" || t == "instinct" || t == "radeon"; });
  const std::string vendor = amd ? "amd" : "nvidia";
  for (const auto& token : tokens) {
    if (auto known = known_model_tokens().find(token); known != known_model_tokens().end())
      return vendor + "-" + known->second;
  }
  std::string slug;
  for (const auto& token : tokens) {
    if (is_vendor_word(token)) continue;
    slug += (slug.empty() ? "" : "-") + token;
  }
  return slug.empty() ? vendor + "-unknown" : vendor + "-" + slug;
}

std::string canonical_pci_bus_id(std::string_view bus_id) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  const std::string text(bus_id);
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) return lowercase(bus_id);
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", domain & 0xffff, bus, device, function);
  return out;
}

double bytes_to_gb(std::uint64_t bytes) { return std::floor(static_cast<double>(bytes) / 1e8) / 10.0; }

std::string cuda_version_string(int cuda_driver_version) {
  return std::to_string(cuda_driver_version / 1000) + "." + std::to_string((cuda_driver_version % 1000) / 10);
}

std::string compute_mode_name(int mode) {
  switch (mode) {
    case 0: return "default";
    case 1: return "exclusive_thread";
    case 2: return "prohibited";
    case 3: return "exclusive_process";
    default: return "unknown";
  }
}

std::string gpu_health_fault(const RecordedGpu& gpu) {
  if (gpu.query_failed) return "an NVML query failed: the GPU is lost or broken";
  if (gpu.ecc_uncorrected_volatile > 0)
    return std::to_string(gpu.ecc_uncorrected_volatile) + " uncorrected ECC errors since driver load";
  if (gpu.retired_pages_pending) return "retired memory pages pending: the GPU needs a reset";
  // An operator setting (nvidia-smi -c PROHIBITED), not a fault, but no process
  // can create a CUDA context on it, so no job may be placed there.
  if (gpu.compute_mode == 2) return "compute mode prohibited: no CUDA context can be created";
  return {};
}

bool is_gpu_healthy(const RecordedGpu& gpu) { return gpu_health_fault(gpu).empty(); }

std::string mig_profile_name(const RecordedMigDevice& mig) {
  const unsigned gi = mig.gpu_instance_slice_count;
  const unsigned ci = mig.compute_instance_slice_count ? mig.compute_instance_slice_count : gi;
  const auto gib = static_cast<unsigned long long>(std::ceil(static_cast<double>(mig.memory_total_bytes) / (1ULL << 30)));
  std::string name = ci != gi ? std::to_string(ci) + "c." : "";
  return name + std::to_string(gi) + "g." + std::to_string(gib) + "gb";
}

namespace {

// One entry of devices[]: a whole GPU, or a MIG device carved out of one.
struct Advertised {
  const RecordedGpu* gpu;            // the physical GPU (the parent of a MIG device)
  const RecordedMigDevice* mig;      // null for a whole GPU
  unsigned index;
  std::uint64_t memory_bytes;
  bool healthy;
};

nlohmann::json device_json(const Advertised& d, const std::set<unsigned>& peers) {
  const RecordedGpu& gpu = *d.gpu;
  nlohmann::json j = {{"index", d.index},
                      {"uuid", d.mig ? d.mig->uuid : gpu.uuid},
                      {"type", gpu_type_id(gpu.name)},
                      {"name", gpu.name},
                      {"memory_gb", bytes_to_gb(d.memory_bytes)},
                      {"compute_capability", compute_capability_string(gpu)},
                      {"pci_bus_id", canonical_pci_bus_id(gpu.pci_bus_id)},
                      {"numa_node", gpu.numa_node},
                      {"nvlink_peers", peers},  // MIG devices have none: MIG disables peer-to-peer
                      {"healthy", d.healthy},
                      {"compute_mode", compute_mode_name(gpu.compute_mode)}};
  if (!d.healthy) {
    const std::string fault = gpu_health_fault(gpu);
    j["health_reason"] = fault.empty() ? "the MIG device's query failed" : fault;
  }
  if (!d.mig && gpu.mig_supported) {
    // A MIG-capable GPU used whole; a pending mode other than the current one
    // takes effect at its next reset, when this advertisement will change.
    j["mig_mode"] = "disabled";
    if (gpu.mig_pending_enabled) j["mig_mode_pending"] = "enabled";
  }
  if (d.mig) {
    j["mig_profile"] = mig_profile_name(*d.mig);
    j["parent_index"] = gpu.index;
    const unsigned slices = d.mig->compute_instance_slice_count ? d.mig->compute_instance_slice_count
                                                                 : d.mig->gpu_instance_slice_count;
    if (gpu.max_mig_devices > 0 && slices > 0)
      j["compute_fraction"] = std::floor(1000.0 * slices / gpu.max_mig_devices) / 1000.0;
  }
  return j;
}

}  // namespace

GpuCapabilities map_gpu_inventory(const RecordedGpuInventory& inventory) {
  GpuCapabilities out;
  if (!inventory.driver_version.empty()) out.labels["nvidia.com/driver-version"] = inventory.driver_version;
  if (inventory.cuda_driver_version > 0)
    out.labels["nvidia.com/cuda-version"] = cuda_version_string(inventory.cuda_driver_version);
  if (inventory.gpus.empty()) return out;

  // Whole GPUs keep their NVML index; MIG devices are numbered after all GPUs
  // (a MIG-enabled GPU itself is not advertised: CUDA cannot use it whole).
  const auto peers = nvlink_peers(inventory);
  std::vector<Advertised> advertised;
  std::vector<Advertised> slices;
  unsigned next_mig_index = static_cast<unsigned>(inventory.gpus.size());
  for (const auto& gpu : inventory.gpus) {
    const bool ok = is_gpu_healthy(gpu);
    if (!gpu.mig_enabled) {
      advertised.push_back({&gpu, nullptr, gpu.index, gpu.memory_total_bytes, ok});
      continue;
    }
    for (const auto& mig : gpu.mig_devices)
      slices.push_back({&gpu, &mig, next_mig_index++, mig.memory_total_bytes, ok && !mig.query_failed});
  }
  const bool any_mig = !slices.empty();
  advertised.insert(advertised.end(), slices.begin(), slices.end());
  if (advertised.empty()) return out;  // every GPU is in MIG mode without instances

  std::set<unsigned> whole;  // NVLink peers are whole GPUs: a MIG-enabled GPU is no device of its own
  for (const auto& d : advertised)
    if (!d.mig) whole.insert(d.index);
  std::vector<const Advertised*> healthy;
  for (const auto& d : advertised) {
    std::set<unsigned> linked;
    if (!d.mig)
      for (const unsigned peer : peers[static_cast<std::size_t>(d.gpu - inventory.gpus.data())])
        if (whole.count(peer)) linked.insert(peer);
    out.devices.push_back(device_json(d, linked));
    if (d.healthy) healthy.push_back(&d);
  }
  // With no healthy device the aggregates describe all of them; the broker still
  // assigns none, since it never hands out a device marked unhealthy.
  if (healthy.empty())
    for (const auto& d : advertised) healthy.push_back(&d);

  // Mixed boxes are rare; the first healthy card names the type, devices[] tells the rest.
  // Memory is per GPU, the smallest; with MIG devices beside whole GPUs the
  // largest, so the static check does not refuse what a whole GPU can take
  // (device assignment then checks each device).
  auto by_memory = [](const Advertised* a, const Advertised* b) { return a->memory_bytes < b->memory_bytes; };
  const Advertised* sized = any_mig ? *std::max_element(healthy.begin(), healthy.end(), by_memory)
                                    : *std::min_element(healthy.begin(), healthy.end(), by_memory);
  const Advertised* oldest =
      *std::min_element(healthy.begin(), healthy.end(), [](auto* a, auto* b) { return cc_less(*a->gpu, *b->gpu); });
  bool all_nvlinked = healthy.size() > 1;
  for (const auto* a : healthy)
    for (const auto* b : healthy) {
      if (a == b) continue;
      if (a->mig || b->mig) all_nvlinked = false;
      else if (!peers[static_cast<std::size_t>(a->gpu - inventory.gpus.data())].count(b->index)) all_nvlinked = false;
    }
  out.gpu = {{"type", gpu_type_id(healthy.front()->gpu->name)},
             {"count", advertised.size()},  // the broker requires count == devices.size()
             {"memory_gb", bytes_to_gb(sized->memory_bytes)},
             {"compute_capability", compute_capability_string(*oldest->gpu)},
             {"interconnect", all_nvlinked ? "nvlink" : "pcie"}};
  out.labels["nvidia.com/gpu.product"] = healthy.front()->gpu->name;
  if (any_mig) out.labels["nvidia.com/mig.enabled"] = "true";
  // The label NVIDIA's GPU feature discovery sets, so selectors written for it match here.
  const bool mig_capable = std::any_of(inventory.gpus.begin(), inventory.gpus.end(),
                                       [](const RecordedGpu& gpu) { return gpu.mig_supported; });
  out.labels["nvidia.com/mig.capable"] = mig_capable ? "true" : "false";
  return out;
}

}  // namespace ojs::worker
