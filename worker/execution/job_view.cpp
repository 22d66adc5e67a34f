#include "worker/execution/job_view.hpp"

#include <stdexcept>

#include "ojs/ml/meta_aliases.hpp"
#include "ojs/ml/requirements.hpp"
#include "worker/isolation/cuda_libraries.hpp"

namespace ojs::worker {

namespace {

using ojs::ml::ml_attribute;  // top-level ext_ml_* wins, else the SDK meta encoding (one alias table)

std::string ml_string(const nlohmann::json& job, std::string_view name) {
  const auto* value = ml_attribute(job, name);
  return value && value->is_string() ? value->get<std::string>() : std::string();
}

std::optional<double> job_timeout_s(const nlohmann::json& job) {
  if (const auto* ml = ml_attribute(job, "timeout_seconds"); ml && ml->is_number())
    return ml->get<double>();
  if (auto it = job.find("timeout_ms"); it != job.end() && it->is_number()) return it->get<double>() / 1000.0;
  if (auto it = job.find("timeout"); it != job.end() && it->is_number() && it->get<double>() > 0)
    return it->get<double>();
  return std::nullopt;
}

}  // namespace

std::optional<JobView::Gang> read_gang(const nlohmann::json& fields) {
  if (!fields.is_object()) return std::nullopt;
  const auto it = fields.find("ext_ml_gang_rank");
  if (it == fields.end() || !it->is_number_integer()) return std::nullopt;
  const auto number = [&](const char* name, int fallback) {
    const auto f = fields.find(name);
    return f != fields.end() && f->is_number_integer() ? f->get<int>() : fallback;
  };
  const auto addr = fields.find("ext_ml_gang_master_addr");
  return JobView::Gang{it->get<int>(), number("ext_ml_gang_world_size", 0),
                       addr != fields.end() && addr->is_string() ? addr->get<std::string>() : std::string(),
                       number("ext_ml_gang_master_port", 0), number("ext_ml_gang_generation", 1)};
}

JobView read_job(const nlohmann::json& job) {
  if (!job.is_object() || !job.contains("id") || !job["id"].is_string())
    throw std::invalid_argument("job has no string id");
  JobView view;
  view.id = job["id"].get<std::string>();
  view.type = job.value("type", "");
  if (view.type.empty()) throw std::invalid_argument("job " + view.id + " has no type");
  view.queue = job.value("queue", "");
  if (auto it = job.find("attempt"); it != job.end() && it->is_number_integer()) view.attempt = it->get<int>();
  if (auto it = job.find("ext_ml_assigned_devices"); it != job.end() && it->is_array())
    view.assigned_devices = it->get<std::vector<int>>();
  view.timeout_s = job_timeout_s(job);
  view.model_id = ml_string(job, "model_id");
  view.model_checksum = ml_string(job, "model_checksum");
  view.model_registry_uri = ml_string(job, "model_registry_uri");
  if (auto it = job.find("last_checkpoint"); it != job.end()) view.last_checkpoint = *it;
  view.gang = read_gang(job);
  if (const auto* grace = ml_attribute(job, "preemption_grace_period_s");
      grace && grace->is_number_integer())
    view.preemption_grace_period_s = grace->get<int>();
  try {
    const auto requirements = ml::parse_requirements(job);
    view.memory_gb = requirements.hard.memory_gb;
    if (const auto cuda = requirements.hard.node_selector.find(kCudaVersionLabel); cuda != requirements.hard.node_selector.end())
      view.cuda_version = cuda->second;
    const auto& checkpoint = requirements.scheduling.checkpoint;
    if (!checkpoint.storage_uri.empty()) view.checkpoint_uri = checkpoint.storage_uri + view.id + "/";  // the URI ends with '/'
    if (checkpoint.enabled) view.checkpoint_interval_s = checkpoint.interval_s;
    view.checkpoint_max_count = checkpoint.max_count;
  } catch (const std::exception&) {  // the broker accepted it at PUSH; a document changed since runs without checkpoint settings
  }
  return view;
}

}  // namespace ojs::worker
