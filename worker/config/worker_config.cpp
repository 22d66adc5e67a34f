#include "worker/config/worker_config.hpp"

#include "worker/config/json_file.hpp"
#include "worker/isolation/cuda_libraries.hpp"

#include <algorithm>
#include <stdexcept>

namespace ojs::worker {

namespace {

template <typename T>
void read_if_present(const nlohmann::json& document, const char* key, T& target) {
  if (auto it = document.find(key); it != document.end() && !it->is_null()) it->get_to(target);
}

ConfiguredModel parse_model(const nlohmann::json& entry) {
  if (entry.is_string()) return ConfiguredModel{entry.get<std::string>(), "", "", ""};
  ConfiguredModel model;
  model.model_id = entry.at("model_id").get<std::string>();
  read_if_present(entry, "model_version", model.model_version);
  read_if_present(entry, "model_format", model.model_format);
  read_if_present(entry, "path", model.path);
  return model;
}

}  // namespace

WorkerConfig parse_worker_config(const nlohmann::json& document) {
  if (!document.is_object()) throw std::invalid_argument("worker config must be a JSON object");
  WorkerConfig config;
  if (auto it = document.find("commands"); it != document.end())
    for (const auto& [type, command] : it->items()) config.commands[type] = command_from_json(command);
  read_if_present(document, "labels", config.labels);
  if (auto it = document.find("models"); it != document.end())
    for (const auto& entry : *it) config.models.push_back(parse_model(entry));
  read_if_present(document, "runtimes", config.runtimes);
  read_if_present(document, "models_dir", config.models_dir);
  read_if_present(document, "work_dir", config.work_dir);
  read_if_present(document, "scratch_dir", config.scratch_dir);
  read_if_present(document, "nvml_library", config.nvml_library);
  read_if_present(document, "concurrency", config.concurrency);
  read_if_present(document, "default_timeout_s", config.default_timeout_s);
  read_if_present(document, "kill_grace_s", config.kill_grace_s);
  read_if_present(document, "drain_timeout_s", config.drain_timeout_s);
  read_if_present(document, "checkpoint_poll_s", config.checkpoint_poll_s);
  read_if_present(document, "keep_work_dirs", config.keep_work_dirs);
  read_if_present(document, "log_ship_interval_s", config.log_ship_interval_s);
  read_if_present(document, "log_max_bytes", config.log_max_bytes);
  if (auto it = document.find("gpu_sharing"); it != document.end()) {
    if (!it->is_object()) throw std::invalid_argument("gpu_sharing must be an object");
    read_if_present(*it, "mode", config.gpu_sharing.mode);
    read_if_present(*it, "active_thread_percentage", config.gpu_sharing.active_thread_percentage);
    const auto& mode = config.gpu_sharing.mode;
    if (mode != "auto" && mode != "exclusive" && mode != "mps")
      throw std::invalid_argument("gpu_sharing.mode must be auto, exclusive or mps");
    if (config.gpu_sharing.active_thread_percentage < 0 || config.gpu_sharing.active_thread_percentage > 100)
      throw std::invalid_argument("gpu_sharing.active_thread_percentage must be between 1 and 100");
  }
  read_if_present(document, "telemetry_interval_s", config.telemetry_interval_s);
  read_if_present(document, "max_gpu_temperature_c", config.max_gpu_temperature_c);
  if (config.telemetry_interval_s < 0) throw std::invalid_argument("telemetry_interval_s must be 0 (off) or more");
  if (auto it = document.find("isolation"); it != document.end()) {
    if (!it->is_object()) throw std::invalid_argument("isolation must be an object");
    auto& iso = config.isolation;
    read_if_present(*it, "mode", iso.mode);
    read_if_present(*it, "cgroup_version", iso.cgroup_version);
    read_if_present(*it, "cgroup_root", iso.cgroup_root);
    read_if_present(*it, "dev_dir", iso.dev_dir);
    read_if_present(*it, "pids_max", iso.pids_max);
    if (iso.mode != "auto" && iso.mode != "on" && iso.mode != "off") throw std::invalid_argument("isolation.mode must be auto, on or off");
    if (iso.cgroup_version != "auto" && iso.cgroup_version != "v1" && iso.cgroup_version != "v2")
      throw std::invalid_argument("isolation.cgroup_version must be auto, v1 or v2");
    if (iso.pids_max < 1) throw std::invalid_argument("isolation.pids_max must be at least 1");
    if (auto cpus = it->find("numa_cpus"); cpus != it->end()) {
      if (!cpus->is_object()) throw std::invalid_argument("isolation.numa_cpus must be an object of NUMA node -> CPU list");
      for (const auto& [node, list] : cpus->items()) {
        if (!list.is_string() || node.empty() || node.find_first_not_of("0123456789") != std::string::npos)
          throw std::invalid_argument("isolation.numa_cpus." + node + " must map a NUMA node number to a CPU list string (\"0-15\")");
        iso.numa_cpus[std::stoi(node)] = list.get<std::string>();
      }
    }
    if (auto cuda = it->find("cuda_libraries"); cuda != it->end()) {
      if (!cuda->is_object()) throw std::invalid_argument("isolation.cuda_libraries must be an object of CUDA version -> directory");
      for (const auto& [version, dir] : cuda->items()) {
        if (!is_cuda_version(version) || !dir.is_string() || dir.get<std::string>().rfind('/', 0) != 0)
          throw std::invalid_argument("isolation.cuda_libraries." + version +
                                      " must map a CUDA version (\"12.2\") to an absolute directory (\"/opt/cuda-12.2\")");
        iso.cuda_libraries[version] = dir.get<std::string>();
      }
    }
  }
  if (auto it = document.find("checkpoint_retention_command"); it != document.end() && !it->is_null()) {
    const bool argv = it->is_array() && !it->empty() && std::all_of(it->begin(), it->end(), [](const nlohmann::json& a) { return a.is_string(); });
    if (!argv || it->front().get<std::string>().empty())
      throw std::invalid_argument("checkpoint_retention_command must be an array of strings: the program and its arguments "
                                  "(each URI to delete is appended)");
    config.checkpoint_retention_command = it->get<std::vector<std::string>>();
  }
  read_if_present(document, "checkpoint_retention_timeout_s", config.checkpoint_retention_timeout_s);
  if (!(config.checkpoint_retention_timeout_s > 0))
    throw std::invalid_argument("checkpoint_retention_timeout_s must be more than 0");
  if (!config.labels.is_object()) throw std::invalid_argument("labels must be an object of strings");
  return config;
}

WorkerConfig load_worker_config(const std::string& path) {
  try {
    return parse_worker_config(read_json_file(path));
  } catch (const std::exception& e) {
    throw std::runtime_error("config " + path + ": " + e.what());
  }
}

nlohmann::json models_loaded_json(const std::vector<ConfiguredModel>& models) {
  auto out = nlohmann::json::array();
  for (const auto& model : models) {
    nlohmann::json entry = {{"model_id", model.model_id}};
    if (!model.model_version.empty()) entry["model_version"] = model.model_version;
    if (!model.model_format.empty()) entry["model_format"] = model.model_format;
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace ojs::worker
