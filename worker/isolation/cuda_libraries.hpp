// The CUDA libraries a worker offers its jobs (isolation.cuda_libraries: version ->
// host directory). A job names the version it needs the one way a job names a CUDA
// version, its node selector on the label nvidia.com/cuda-version; the launcher
// bind-mounts that version's directory read-only at /usr/local/cuda-<version> in the
// job's mount namespace and puts its lib64 first on LD_LIBRARY_PATH. The worker's
// label comes from the same map, so the broker places the job only where it is.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>

namespace ojs::worker {

inline constexpr const char* kCudaVersionLabel = "nvidia.com/cuda-version";

struct CudaMount {
  std::string source;   // the host directory
  std::string target;   // /usr/local/cuda-<version>
  std::string lib_dir;  // <target>/lib64
};

// The mount for `version` ("": none asked, nullopt); throws std::runtime_error when
// the worker has libraries but not this version (the job must not run without them).
std::optional<CudaMount> cuda_mount(const std::map<std::string, std::string>& libraries, const std::string& version);

// The newest version of the map ("12.10" is newer than "12.2"); "" when empty.
std::string newest_cuda_version(const std::map<std::string, std::string>& libraries);

// The advertised label from the map: its newest version while jobs are isolated (the
// libraries can be mounted), none when they are not; untouched without a map (then it
// is the driver's CUDA version, from NVML).
void advertise_cuda_libraries(nlohmann::json& capabilities, const std::map<std::string, std::string>& libraries, bool isolated);

// Whether `version` is a CUDA version ("12.2"): digits and dots, as it names a path.
bool is_cuda_version(const std::string& version);

}  // namespace ojs::worker
