#include "broker/store/progress_store.hpp"

#include <cstdio>

#include "broker/store/keys.hpp"

namespace ojs::broker {

ProgressOutcome ProgressStore::report(const std::string& queue, const std::string& id, const std::string& worker_id,
                                      std::optional<double> progress, const std::string& data_json,
                                      std::int64_t default_visibility_ms, const std::string& message_json) {
  std::string value;
  if (progress) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", *progress);
    value = buf;
  }
  const auto reply = redis_.eval("progress", {keys::job(queue, id), keys::active(queue), keys::events(queue)},
                                 {id, worker_id, value, data_json, std::to_string(default_visibility_ms), message_json});
  ProgressOutcome out;
  const auto& word = reply.elements.at(0).str;
  if (word == "not_found") out.kind = ProgressOutcome::Kind::not_found;
  else if (word == "ignored" || word == "conflict") {
    out.kind = word == "ignored" ? ProgressOutcome::Kind::ignored : ProgressOutcome::Kind::conflict;
    out.reason = reply.elements.at(1).str;
  } else {
    out.progress = reply.elements.at(1).str;
  }
  return out;
}

}  // namespace ojs::broker
