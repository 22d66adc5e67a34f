#include "broker/store/idempotency_store.hpp"

#include "broker/store/keys.hpp"

namespace ojs::broker {

namespace {
std::string encode(const IdempotencyRecord& r) { return r.job_id + " " + r.request_digest; }
}  // namespace

std::optional<IdempotencyRecord> IdempotencyStore::take(const std::string& scope, const IdempotencyRecord& record,
                                                       std::chrono::seconds ttl) {
  const auto reply = redis_.command({"SET", keys::idempotency(scope), encode(record), "NX", "GET", "EX", std::to_string(ttl.count())});
  if (reply.is_nil()) return std::nullopt;  // taken by this request
  const auto space = reply.str.find(' ');
  if (space == std::string::npos) return IdempotencyRecord{reply.str, ""};
  return IdempotencyRecord{reply.str.substr(0, space), reply.str.substr(space + 1)};
}

void IdempotencyStore::give_back(const std::string& scope, const IdempotencyRecord& record) {
  redis_.eval("idempotency_give_back", {keys::idempotency(scope)}, {encode(record)});
}

}  // namespace ojs::broker
