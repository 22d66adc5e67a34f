#include "ojs/ml/capabilities.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "ojs/core/digest.hpp"
#include "json_fields.hpp"
#include "ojs/core/error.hpp"

namespace ojs::ml {
namespace {

using nlohmann::json;

std::optional<ComputeCapability> read_cc(const Field& f) {
  if (!f.value) return std::nullopt;
  auto cc = parse_compute_capability(read_string(f, 16));
  if (!cc) throw invalid_field(f.path, "must be \"major.minor\" (e.g. \"9.0\")");
  return cc;
}

template <typename T, typename Read>
void read_opt(const Field& parent, std::string_view name, T& out, Read read) {
  Field f = member(parent, name);
  if (f.value) out = read(f);
}

GpuCapability parse_gpu(const Field& g) {
  GpuCapability gpu;
  read_opt(g, "type", gpu.type, [](const Field& f) { return lowercase(read_string(f, 128)); });
  read_opt(g, "count", gpu.count, [](const Field& f) { return read_int(f, 0, 1024); });
  read_opt(g, "memory_gb", gpu.memory_gb, [](const Field& f) { return read_number(f, 0); });
  gpu.compute_capability = read_cc(member(g, "compute_capability"));
  read_opt(g, "interconnect", gpu.interconnect, [](const Field& f) { return read_enum(f, {"nvlink", "pcie", "none"}); });
  if (gpu.interconnect == "none") gpu.interconnect.clear();
  return gpu;
}

GpuDevice parse_device(const Field& d, int position, const GpuCapability& gpu) {
  GpuDevice dev;
  dev.index = position;
  read_opt(d, "index", dev.index, [](const Field& f) { return read_int(f, 0, 1023); });
  read_opt(d, "uuid", dev.uuid, [](const Field& f) { return read_string(f, 128); });
  dev.type = gpu.type;
  read_opt(d, "type", dev.type, [](const Field& f) { return lowercase(read_string(f, 128)); });
  dev.memory_gb = gpu.memory_gb;
  read_opt(d, "memory_gb", dev.memory_gb, [](const Field& f) { return read_number(f, 0); });
  dev.compute_capability = read_cc(member(d, "compute_capability"));
  if (!dev.compute_capability) dev.compute_capability = gpu.compute_capability;
  read_opt(d, "numa_node", dev.numa_node, [](const Field& f) { return read_int(f, -1, 1023); });
  read_opt(d, "nvlink_peers", dev.nvlink_peers, [](const Field& f) {
    if (!f.value->is_array()) throw invalid_field(f.path, "must be an array of device indices");
    std::vector<int> peers;
    for (std::size_t i = 0; i < f.value->size(); ++i)
      peers.push_back(read_int({&(*f.value)[i], f.path + "[" + std::to_string(i) + "]"}, 0, 1023));
    std::sort(peers.begin(), peers.end());
    return peers;
  });
  read_opt(d, "healthy", dev.healthy, read_bool);
  read_opt(d, "health_reason", dev.health_reason, [](const Field& f) { return read_string(f, 256); });
  read_opt(d, "mig_profile", dev.mig_profile, [](const Field& f) { return read_string(f, 32); });
  read_opt(d, "parent_index", dev.parent_index, [](const Field& f) { return read_int(f, 0, 1023); });
  read_opt(d, "sharing", dev.sharing, [](const Field& f) { return read_enum(f, {"exclusive", "mps"}); });
  read_opt(d, "mps_active_thread_percentage", dev.mps_active_thread_percentage,
           [](const Field& f) { return read_int(f, 1, 100); });
  read_opt(d, "max_jobs", dev.max_jobs, [](const Field& f) { return read_int(f, 1, 64); });
  if (dev.sharing == "exclusive" && dev.max_jobs > 1)
    throw invalid_field(d.path + ".max_jobs", "must be 1 unless sharing is \"mps\"");
  read_opt(d, "compute_fraction", dev.compute_fraction, [](const Field& f) {
    const double v = read_number(f, 0);
    if (v <= 0 || v > 1) throw invalid_field(f.path, "must be a number in (0, 1]");
    return v;
  });
  return dev;
}

// Fills the aggregate gpu{} from devices[] where the worker left it out, so the
// static predicates can work from gpu{} alone.
void aggregate_devices(Capabilities& c, const Field& devices_field, bool count_given) {
  const auto& devs = c.devices;
  if (devs.empty()) return;
  if (count_given && c.gpu.count != static_cast<int>(devs.size()))
    throw invalid_field("capabilities.gpu.count", "must equal the number of devices (" + std::to_string(devs.size()) + ")");
  c.gpu.count = static_cast<int>(devs.size());
  std::set<int> seen;
  bool any_peers = false, any_mig = false;
  double min_mem = devs.front().memory_gb, max_mem = devs.front().memory_gb;
  for (const auto& d : devs) {
    if (!seen.insert(d.index).second) throw invalid_field(devices_field.path, "device indices must be unique");
    min_mem = std::min(min_mem, d.memory_gb);
    max_mem = std::max(max_mem, d.memory_gb);
    any_mig = any_mig || d.is_mig();
    if (d.compute_capability && (!c.gpu.compute_capability || *d.compute_capability < *c.gpu.compute_capability))
      c.gpu.compute_capability = d.compute_capability;
    any_peers = any_peers || !d.nvlink_peers.empty();
  }
  // The weakest device judges statically; beside MIG devices the largest does,
  // or a 1g.10gb slice would hide the whole GPU next to it (assignment checks each device).
  c.gpu.memory_gb = any_mig ? max_mem : min_mem;
  if (c.gpu.type.empty() && std::all_of(devs.begin(), devs.end(), [&](const GpuDevice& d) { return d.type == devs[0].type; }))
    c.gpu.type = devs[0].type;
  if (c.gpu.interconnect.empty() && any_peers) c.gpu.interconnect = "nvlink";
}

Labels read_labels(const Field& f) {
  if (!f.value->is_array()) return read_string_map(f);
  // worker-info style ["region=us-east-1", "canary"]: "k=v" or a bare flag.
  Labels out;
  for (const auto& s : read_string_list(f)) {
    auto [key, value] = split_label(s);
    out[key] = std::move(value);
  }
  return out;
}

void derive_labels(Capabilities& c) {
  auto put = [&](const char* key, const std::string& value) {
    if (!value.empty()) c.labels.try_emplace(key, value);
  };
  put("accelerator", std::string(to_string(c.accelerator)));
  if (c.gpu.count > 0) {
    put("gpu_type", c.gpu.type);
    put("gpu_count", std::to_string(c.gpu.count));
    put("gpu_memory_gb", format_number(c.gpu.memory_gb));
    if (c.gpu.compute_capability) put("gpu_compute_capability", c.gpu.compute_capability->str());
    put("gpu_interconnect", c.gpu.interconnect);
  }
  put("tpu_type", c.tpu.type);
  put("tpu_topology", c.tpu.topology);
  if (c.cpu_cores) put("cpu_cores", std::to_string(*c.cpu_cores));
  if (c.memory_gb) put("memory_gb", format_number(*c.memory_gb));
}

}  // namespace

bool Capabilities::has_model(std::string_view id, std::string_view version) const {
  return std::any_of(models_loaded.begin(), models_loaded.end(), [&](const LoadedModel& m) {
    return m.model_id == id && (version.empty() || m.model_version == version);
  });
}

void require_bounded_capabilities(const nlohmann::json& body, std::size_t json_bytes) {
  if (json_bytes > kMaxCapabilitiesBytes)
    throw invalid_field("capabilities", "must be at most " + std::to_string(kMaxCapabilitiesBytes) + " bytes as compact JSON (is " +
                                            std::to_string(json_bytes) + ")");
  if (!body.is_object()) return;
  for (const char* list : {"devices", "models_loaded", "runtimes", "model_formats", "labels"}) {
    const auto it = body.find(list);
    if (it != body.end() && it->size() > kMaxCapabilityItems)
      throw invalid_field(std::string("capabilities.") + list, "must have at most " + std::to_string(kMaxCapabilityItems) + " entries");
  }
}

Capabilities parse_capabilities(const nlohmann::json& body) {
  const Field root{&body, "capabilities"};
  if (!body.is_object()) throw invalid_field(root.path, "must be an object");
  Capabilities c;
  std::optional<Accelerator> accelerator;
  read_opt(root, "accelerator", accelerator,
           [](const Field& f) { return parse_accelerator(read_enum(f, {"gpu", "tpu", "fpga", "cpu"})); });
  Field gpu = member(root, "gpu");
  if (gpu.value) c.gpu = parse_gpu(gpu);
  Field tpu = member(root, "tpu");
  if (tpu.value) {
    read_opt(tpu, "type", c.tpu.type, [](const Field& f) { return read_string(f, 32); });
    read_opt(tpu, "topology", c.tpu.topology, [](const Field& f) { return read_string(f, 32); });
    read_opt(tpu, "chip_count", c.tpu.chip_count, [](const Field& f) { return read_int(f, 0, 65536); });
  }
  read_opt(root, "cpu_cores", c.cpu_cores, [](const Field& f) { return read_int(f, 0); });
  auto non_negative = [](const Field& f) { return read_number(f, 0); };
  read_opt(root, "memory_gb", c.memory_gb, non_negative);
  read_opt(root, "storage_gb", c.storage_gb, non_negative);
  read_opt(root, "shm_size_gb", c.shm_size_gb, non_negative);

  if (Field models = member(root, "models_loaded"); models.value) {
    if (!models.value->is_array()) throw invalid_field(models.path, "must be an array");
    for (std::size_t i = 0; i < models.value->size(); ++i) {
      Field m{&(*models.value)[i], models.path + "[" + std::to_string(i) + "]"};
      LoadedModel lm;
      if (m.value->is_string()) {
        lm.model_id = m.value->get<std::string>();
      } else {
        Field id = member(m, "model_id");
        if (!id.value) throw invalid_field(id.path, "is required");
        lm.model_id = read_string(id, 256);
        read_opt(m, "model_version", lm.model_version, [](const Field& f) { return read_string(f, 128); });
        read_opt(m, "model_format", lm.model_format, [](const Field& f) { return read_string(f, 64); });
      }
      c.models_loaded.push_back(std::move(lm));
    }
    std::sort(c.models_loaded.begin(), c.models_loaded.end(), [](const LoadedModel& a, const LoadedModel& b) {
      return std::tie(a.model_id, a.model_version, a.model_format) < std::tie(b.model_id, b.model_version, b.model_format);
    });
  }
  read_opt(root, "runtimes", c.runtimes, read_string_list);
  read_opt(root, "model_formats", c.model_formats, read_string_list);
  std::sort(c.runtimes.begin(), c.runtimes.end());
  std::sort(c.model_formats.begin(), c.model_formats.end());
  read_opt(root, "labels", c.labels, read_labels);

  if (Field devices = member(root, "devices"); devices.value) {
    if (!devices.value->is_array()) throw invalid_field(devices.path, "must be an array");
    for (std::size_t i = 0; i < devices.value->size(); ++i)
      c.devices.push_back(parse_device({&(*devices.value)[i], devices.path + "[" + std::to_string(i) + "]"},
                                       static_cast<int>(i), c.gpu));
    std::sort(c.devices.begin(), c.devices.end(), [](const GpuDevice& a, const GpuDevice& b) { return a.index < b.index; });
    aggregate_devices(c, devices, gpu.value && gpu.value->contains("count"));
  }

  if (accelerator) c.accelerator = *accelerator;
  else if (c.gpu.count > 0) c.accelerator = Accelerator::gpu;
  else if (c.tpu.chip_count > 0 || !c.tpu.type.empty()) c.accelerator = Accelerator::tpu;
  derive_labels(c);
  return c;
}

nlohmann::json capabilities_to_json(const Capabilities& c) {
  json out = {{"accelerator", to_string(c.accelerator)}, {"labels", c.labels}};
  if (c.gpu.count > 0 || !c.gpu.type.empty()) {
    json g = {{"type", c.gpu.type}, {"count", c.gpu.count}, {"memory_gb", canonical_number(c.gpu.memory_gb)}};
    if (c.gpu.compute_capability) g["compute_capability"] = c.gpu.compute_capability->str();
    if (!c.gpu.interconnect.empty()) g["interconnect"] = c.gpu.interconnect;
    out["gpu"] = std::move(g);
  }
  if (c.tpu.chip_count > 0 || !c.tpu.type.empty())
    out["tpu"] = {{"type", c.tpu.type}, {"topology", c.tpu.topology}, {"chip_count", c.tpu.chip_count}};
  if (c.cpu_cores) out["cpu_cores"] = *c.cpu_cores;
  if (c.memory_gb) out["memory_gb"] = canonical_number(*c.memory_gb);
  if (c.storage_gb) out["storage_gb"] = canonical_number(*c.storage_gb);
  if (c.shm_size_gb) out["shm_size_gb"] = canonical_number(*c.shm_size_gb);
  if (!c.models_loaded.empty()) {
    json models = json::array();
    for (const auto& m : c.models_loaded)
      models.push_back({{"model_id", m.model_id}, {"model_version", m.model_version}, {"model_format", m.model_format}});
    out["models_loaded"] = std::move(models);
  }
  if (!c.runtimes.empty()) out["runtimes"] = c.runtimes;
  if (!c.model_formats.empty()) out["model_formats"] = c.model_formats;
  if (!c.devices.empty()) {
    json devs = json::array();
    for (const auto& d : c.devices) {
      json j = {{"index", d.index},         {"uuid", d.uuid},           {"type", d.type},
                {"memory_gb", canonical_number(d.memory_gb)}, {"numa_node", d.numa_node}, {"nvlink_peers", d.nvlink_peers},
                {"healthy", d.healthy}};
      if (d.compute_capability) j["compute_capability"] = d.compute_capability->str();
      if (d.sharing == "mps")
        j.update({{"sharing", d.sharing}, {"mps_active_thread_percentage", d.mps_active_thread_percentage},
                  {"max_jobs", d.max_jobs}});
      if (d.is_mig())
        j.update({{"mig_profile", d.mig_profile}, {"parent_index", d.parent_index},
                  {"compute_fraction", canonical_number(d.compute_fraction)}});
      devs.push_back(std::move(j));
    }
    out["devices"] = std::move(devs);
  }
  return out;
}

std::string fingerprint(const Capabilities& caps) { return sha256_hex16(capabilities_to_json(caps).dump()); }

nlohmann::json unhealthy_devices(const nlohmann::json& capabilities) {
  json out = json::array();
  if (!capabilities.is_object()) return out;
  Capabilities caps;
  try {
    caps = parse_capabilities(capabilities);
  } catch (const std::exception&) {
    return out;
  }
  for (const auto& d : caps.devices) {
    if (d.healthy) continue;
    json entry = {{"index", d.index}, {"uuid", d.uuid}, {"reason", d.health_reason.empty() ? "marked unhealthy" : d.health_reason}};
    if (d.is_mig()) entry["mig_profile"] = d.mig_profile;
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace ojs::ml
