#include "broker/store/gang_store.hpp"

#include <algorithm>

#include "broker/store/keys.hpp"

namespace ojs::broker {

std::vector<GangFacts> GangStore::facts(const std::string& queue, const std::string& worker_id,
                                        const std::vector<std::string>& ids) {
  constexpr std::size_t kSlice = 256;  // a huge heartbeat never holds Redis long
  std::vector<GangFacts> out;
  for (std::size_t from = 0; from < ids.size(); from += kSlice) {
    const auto to = std::min(ids.size(), from + kSlice);
    std::vector<std::string> script_keys;
    std::vector<std::string> args{worker_id};
    for (std::size_t i = from; i < to; ++i) {
      script_keys.push_back(keys::job(queue, ids[i]));
      args.push_back(ids[i]);
    }
    for (const auto& e : redis_.eval("gang_facts", script_keys, args).elements)
      if (e.elements.size() >= 3) out.push_back({e.elements[0].str, e.elements[1].str, e.elements[2].str});
  }
  return out;
}

}  // namespace ojs::broker
