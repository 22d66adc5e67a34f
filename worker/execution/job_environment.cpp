#include "worker/execution/job_environment.hpp"

#include <map>

extern char** environ;

namespace ojs::worker {

std::string cuda_visible_devices(const std::vector<int>& devices) {
  std::string out;
  for (const int index : devices) {
    if (!out.empty()) out.push_back(',');
    out.append(std::to_string(index));
  }
  return out;
}

std::string join_device_ids(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ",") + id;
  return out;
}

std::string mps_pinned_device_mem_limit(const std::vector<long long>& mib) {
  std::string out;
  for (std::size_t ordinal = 0; ordinal < mib.size(); ++ordinal) {
    if (mib[ordinal] <= 0) continue;
    if (!out.empty()) out.push_back(',');
    out += std::to_string(ordinal) + "=" + std::to_string(mib[ordinal]) + "MB";
  }
  return out;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** entry = environ; entry && *entry; ++entry) out.emplace_back(*entry);
  return out;
}

std::vector<std::string> job_environment(const JobView& job, const JobWorkspace& workspace,
                                         const std::vector<std::string>& inherited) {
  std::map<std::string, std::string> vars;
  for (const auto& entry : inherited) {
    const auto eq = entry.find('=');
    if (eq != std::string::npos) vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  if (!job.visible_devices.empty()) vars["CUDA_VISIBLE_DEVICES"] = join_device_ids(job.visible_devices);
  else if (!job.assigned_devices.empty()) vars["CUDA_VISIBLE_DEVICES"] = cuda_visible_devices(job.assigned_devices);
  else if (job.gpus_managed) vars["CUDA_VISIBLE_DEVICES"] = kNoVisibleDevices;
  if (job.mps_active_thread_percentage > 0)
    vars["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(job.mps_active_thread_percentage);
  if (const auto limit = mps_pinned_device_mem_limit(job.mps_pinned_memory_mib); !limit.empty())
    vars["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = limit;
  if (!job.checkpoint_uri.empty()) vars["OJS_CHECKPOINT_URI"] = job.checkpoint_uri;
  if (job.checkpoint_interval_s > 0) vars["OJS_CHECKPOINT_INTERVAL_S"] = std::to_string(job.checkpoint_interval_s);
  if (!job.checkpoint_uri.empty() || job.checkpoint_interval_s > 0)
    vars["OJS_CHECKPOINT_MAX_COUNT"] = std::to_string(job.checkpoint_max_count);
  vars["OJS_JOB_ID"] = job.id;
  vars["OJS_JOB_TYPE"] = job.type;
  vars["OJS_QUEUE"] = job.queue;
  vars["OJS_ATTEMPT"] = std::to_string(job.attempt);
  vars["OJS_JOB_FILE"] = workspace.job_file.string();
  vars["OJS_WORK_DIR"] = workspace.dir.string();
  vars["OJS_CHECKPOINT_FILE"] = workspace.checkpoint_file.string();
  vars["OJS_LAST_CHECKPOINT"] = job.last_checkpoint.is_null() ? "" : job.last_checkpoint.dump();
  // Known up front so a SIGTERM handler can plan; the file holds the value the
  // broker actually granted once a preemption arrives.
  vars["OJS_PREEMPT_GRACE_S"] = std::to_string(job.preemption_grace_period_s);
  vars["OJS_PREEMPT_FILE"] = workspace.preempt_file.string();
  if (job.gang) {  // the rendezvous of torch.distributed (env://) and of our own names
    const auto& g = *job.gang;
    vars["OJS_GANG_RANK"] = vars["RANK"] = std::to_string(g.rank);
    vars["OJS_GANG_WORLD_SIZE"] = vars["WORLD_SIZE"] = std::to_string(g.world_size);
    vars["MASTER_ADDR"] = g.master_addr;
    vars["MASTER_PORT"] = std::to_string(g.master_port);
    // One member per worker: its process is the node's only rank.
    vars["LOCAL_RANK"] = "0";
    vars["LOCAL_WORLD_SIZE"] = "1";
    vars["NODE_RANK"] = std::to_string(g.rank);
    // The resize count of an elastic gang, and the names torchelastic gives a worker
    // process, for code written for `torchrun`'s environment. TORCHELASTIC_RUN_ID is
    // left to torchrun: frameworks read its presence as "launched by torchrun".
    vars["OJS_GANG_GENERATION"] = std::to_string(g.generation);
    vars["TORCHELASTIC_RESTART_COUNT"] = std::to_string(g.generation - 1);
    vars["GROUP_RANK"] = vars["ROLE_RANK"] = std::to_string(g.rank);
    vars["GROUP_WORLD_SIZE"] = vars["ROLE_WORLD_SIZE"] = std::to_string(g.world_size);
  }
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

}  // namespace ojs::worker
