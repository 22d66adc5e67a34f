#include "broker/store/job_index_store.hpp"

#include <algorithm>
#include <utility>

#include "broker/store/keys.hpp"

namespace ojs::broker {

std::vector<std::string> JobIndexStore::available(const std::string& queue, const ClassSet& classes, int limit) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& [id, _] : classes.classes)
    cmds.push_back({"ZRANGE", keys::ready(queue, id), "0", std::to_string(limit - 1), "WITHSCORES"});
  if (cmds.empty()) return {};
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& reply : redis_.pipeline(cmds))
    for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2)
      ranked.emplace_back(std::stod(reply.elements[i + 1].str), reply.elements[i].str);
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < ranked.size() && static_cast<int>(i) < limit; ++i) out.push_back(ranked[i].second);
  return out;
}

std::vector<std::string> JobIndexStore::active(const std::string& queue, int limit) {
  return ids({"ZRANGE", keys::active(queue), "0", std::to_string(limit - 1)});
}

std::vector<std::string> JobIndexStore::dead(const std::string& queue, int limit) {
  return ids({"ZREVRANGE", keys::dead(queue), "0", std::to_string(limit - 1)});
}

std::vector<std::string> JobIndexStore::delayed(const std::string& queue, int limit) {
  return ids({"ZRANGE", keys::delayed(queue), "0", std::to_string(limit - 1)});
}

std::vector<std::string> JobIndexStore::ids(const std::vector<std::string>& command) {
  std::vector<std::string> out;
  for (const auto& e : redis_.command(command).elements) out.push_back(e.str);
  return out;
}

}  // namespace ojs::broker
