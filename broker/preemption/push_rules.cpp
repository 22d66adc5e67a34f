// PUSH rules of the preemption extension: a job naming a reservation gets its own
// class; checkpoint storage URIs must use an allowed prefix.
#include "broker/preemption/preemption.hpp"
#include "ojs/core/digest.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/time.hpp"
#include "ojs/ml/storage_uri.hpp"

namespace ojs::broker {

using nlohmann::json;

void bind_reservation(JobClassification& cls) {
  const auto& id = cls.requirements.scheduling.reservation_id;
  if (id.empty()) return;
  json canonical = json::parse(cls.class_json);
  canonical["ext_ml_reservation_id"] = id;
  cls.class_json = canonical.dump();
  cls.class_id = "r" + sha256_hex16(cls.class_json);
}

void check_checkpoint_prefix(const ml::Requirements& req, const std::vector<std::string>& prefixes) {
  const auto& uri = req.scheduling.checkpoint.storage_uri;
  if (uri.empty() || prefixes.empty()) return;
  if (ml::storage_uri_allowed(uri, prefixes)) return;  // normalised first: no "s3:/", "..", "//" tricks
  std::string list;
  for (const auto& p : prefixes) list += (list.empty() ? "" : ", ") + p;
  throw invalid_field("ext_ml_checkpoint_storage_uri", "must start with an allowed checkpoint prefix (" + list + ")");
}

}  // namespace ojs::broker
