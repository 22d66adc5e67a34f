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

bool is_gpu_healthy(const RecordedGpu& gpu) {
  return !gpu.query_failed && gpu.ecc_uncorrected_volatile <= 0 && !gpu.retired_pages_pending;
}

GpuCapabilities map_gpu_inventory(const RecordedGpuInventory& inventory) {
  GpuCapabilities out;
  if (!inventory.driver_version.empty()) out.labels["nvidia.com/driver-version"] = inventory.driver_version;
  if (inventory.cuda_driver_version > 0)
    out.labels["nvidia.com/cuda-version"] = cuda_version_string(inventory.cuda_driver_version);
  if (inventory.gpus.empty()) return out;

  const auto peers = nvlink_peers(inventory);
  std::vector<const RecordedGpu*> healthy;
  for (std::size_t i = 0; i < inventory.gpus.size(); ++i) {
    const auto& gpu = inventory.gpus[i];
    const bool ok = is_gpu_healthy(gpu);
    if (ok) healthy.push_back(&gpu);
    out.devices.push_back({{"index", gpu.index},
                           {"uuid", gpu.uuid},
                           {"type", gpu_type_id(gpu.name)},
                           {"name", gpu.name},
                           {"memory_gb", bytes_to_gb(gpu.memory_total_bytes)},
                           {"compute_capability", compute_capability_string(gpu)},
                           {"pci_bus_id", canonical_pci_bus_id(gpu.pci_bus_id)},
                           {"numa_node", gpu.numa_node},
                           {"nvlink_peers", peers[i]},
                           {"healthy", ok}});
  }
  // With no healthy card the aggregates describe all of them; the broker still
  // assigns none, since it never hands out a device marked unhealthy.
  if (healthy.empty())
    for (const auto& gpu : inventory.gpus) healthy.push_back(&gpu);

  // Mixed boxes are rare; the first healthy card names the type, devices[] tells the rest.
  const RecordedGpu* smallest = *std::min_element(healthy.begin(), healthy.end(), [](auto* a, auto* b) {
    return a->memory_total_bytes < b->memory_total_bytes;
  });
  const RecordedGpu* oldest = *std::min_element(healthy.begin(), healthy.end(), [](auto* a, auto* b) { return cc_less(*a, *b); });
  bool all_nvlinked = healthy.size() > 1;
  for (const auto* a : healthy)
    for (const auto* b : healthy) {
      if (a == b) continue;
      const auto& a_peers = peers[static_cast<std::size_t>(a - inventory.gpus.data())];
      if (!a_peers.count(b->index)) all_nvlinked = false;
    }
  out.gpu = {{"type", gpu_type_id(healthy.front()->name)},
             {"count", inventory.gpus.size()},  // the broker requires count == devices.size()
             {"memory_gb", bytes_to_gb(smallest->memory_total_bytes)},
             {"compute_capability", compute_capability_string(*oldest)},
             {"interconnect", all_nvlinked ? "nvlink" : "pcie"}};
  out.labels["nvidia.com/gpu.product"] = healthy.front()->name;
  return out;
}

}  // namespace ojs::worker
