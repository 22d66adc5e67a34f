#include "broker/store/idempotency_store.hpp"

#include "broker/store/keys.hpp"

#include <algorithm>

namespace ojs::broker {

namespace {
// "digest id,id,...": ids are UUIDs, the digest hex.
std::string encode(const IdempotencyRecord& r) {
  std::string out = r.request_digest + " ";
  for (std::size_t i = 0; i < r.job_ids.size(); ++i) out += (i ? "," : "") + r.job_ids[i];
  return out;
}

IdempotencyRecord decode(const std::string& text) {
  IdempotencyRecord r;
  const auto space = text.find(' ');
  r.request_digest = text.substr(0, space);
  if (space == std::string::npos) return r;
  for (std::size_t at = space + 1; at <= text.size();) {
    const auto comma = std::min(text.find(',', at), text.size());
    if (comma > at) r.job_ids.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return r;
}
}  // namespace

std::optional<IdempotencyRecord> IdempotencyStore::take(const std::string& scope, const IdempotencyRecord& record,
                                                       std::chrono::seconds ttl) {
  const auto reply = redis_.command({"SET", keys::idempotency(scope), encode(record), "NX", "GET", "EX", std::to_string(ttl.count())});
  if (reply.is_nil()) return std::nullopt;  // taken by this request
  return decode(reply.str);
}

void IdempotencyStore::give_back(const std::string& scope, const IdempotencyRecord& record) {
  redis_.eval("idempotency_give_back", {keys::idempotency(scope)}, {encode(record)});
}

}  // namespace ojs::broker
