#include "broker/store/diagnosis_store.hpp"

#include "broker/store/keys.hpp"

namespace ojs::broker {

std::string DiagnosisStore::record_key(const std::string& queue, const std::string& class_id) {
  return keys::diagnosis(queue, class_id);
}

void DiagnosisStore::write(const std::vector<Record>& records, std::int64_t ttl_ms) {
  if (records.empty()) return;
  std::vector<std::vector<std::string>> cmds;
  for (const auto& r : records) {
    cmds.push_back({"HSET", r.key, r.worker_id, r.judgement_json});
    cmds.push_back({"PEXPIRE", r.key, std::to_string(ttl_ms)});
  }
  redis_.pipeline(cmds);
}

std::vector<std::pair<std::string, std::string>> DiagnosisStore::read(const std::string& queue, const std::string& class_id) {
  const auto v = redis_.command({"HGETALL", keys::diagnosis(queue, class_id)});
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i + 1 < v.elements.size(); i += 2) out.emplace_back(v.elements[i].str, v.elements[i + 1].str);
  return out;
}

}  // namespace ojs::broker
