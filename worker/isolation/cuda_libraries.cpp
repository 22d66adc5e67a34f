#include "worker/isolation/cuda_libraries.hpp"

#include <sstream>
#include <stdexcept>
#include <vector>

namespace ojs::worker {

namespace {

std::vector<long> version_numbers(const std::string& version) {
  std::vector<long> out;
  std::stringstream parts(version);
  for (std::string part; std::getline(parts, part, '.');) out.push_back(part.empty() ? 0 : std::stol(part));
  return out;
}

}  // namespace

bool is_cuda_version(const std::string& version) {
  if (version.empty() || version.size() > 16 || version.front() == '.' || version.back() == '.') return false;
  return version.find_first_not_of("0123456789.") == std::string::npos && version.find("..") == std::string::npos;
}

std::optional<CudaMount> cuda_mount(const std::map<std::string, std::string>& libraries, const std::string& version) {
  if (version.empty() || libraries.empty()) return std::nullopt;
  const auto it = libraries.find(version);
  if (it == libraries.end()) {
    std::string have;
    for (const auto& [v, dir] : libraries) have += (have.empty() ? "" : ", ") + v;
    throw std::runtime_error("the job needs CUDA " + version + " and this worker has the libraries of " + have +
                             " only (isolation.cuda_libraries)");
  }
  const std::string target = "/usr/local/cuda-" + version;
  return CudaMount{it->second, target, target + "/lib64"};
}

std::string newest_cuda_version(const std::map<std::string, std::string>& libraries) {
  std::string newest;
  for (const auto& [version, dir] : libraries)
    if (newest.empty() || version_numbers(newest) < version_numbers(version)) newest = version;
  return newest;
}

void advertise_cuda_libraries(nlohmann::json& capabilities, const std::map<std::string, std::string>& libraries, bool isolated) {
  if (libraries.empty()) return;
  auto& labels = capabilities["labels"];
  if (isolated) labels[kCudaVersionLabel] = newest_cuda_version(libraries);
  else if (labels.is_object()) labels.erase(kCudaVersionLabel);
}

}  // namespace ojs::worker
