#include "broker/scheduling/gang_decision.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace ojs::broker {

namespace {

const GangClass* class_of(const std::vector<GangClass>& eligible, const std::string& id) {
  const auto it = std::find_if(eligible.begin(), eligible.end(), [&](const GangClass& c) { return c.id == id; });
  return it == eligible.end() ? nullptr : &*it;
}

bool holds(const std::string& workers_json, const std::string& worker_id) {
  const auto workers = nlohmann::json::parse(workers_json, nullptr, false);
  if (!workers.is_array()) return false;
  return std::any_of(workers.begin(), workers.end(), [&](const nlohmann::json& w) { return w.is_string() && w.get<std::string>() == worker_id; });
}

}  // namespace

GangPick decide_gang(const GangCandidates& c, const std::vector<GangClass>& eligible, const std::string& worker_id) {
  const auto expired = [&](const std::optional<std::int64_t>& at) { return at && *at <= c.now_ms; };
  std::vector<std::string> expired_heads;  // discarded by the commit, as met (the expiry sweep would, later)
  for (const auto& h : c.heads)
    if (expired(h.expires_at)) expired_heads.push_back(h.job_id);
  if (c.forming && c.forming->state == "available" && !c.forming->workers_json.empty() && !expired(c.forming->expires_at)) {
    const auto& f = *c.forming;
    const GangClass* cls = class_of(eligible, f.class_id);
    // Held by it already: the commit answers with the worker's rank, whatever it may take now.
    if (holds(f.workers_json, worker_id)) return {GangPick::Kind::join, f.id, cls, expired_heads};
    if (!cls) return {GangPick::Kind::none, "", nullptr, expired_heads};
    if (!f.gang_label.empty() && (cls->label_value.empty() || cls->label_value != f.first_label))
      return {GangPick::Kind::none, "", nullptr, expired_heads};
    return {GangPick::Kind::join, f.id, cls, expired_heads};
  }
  // No gang forms (or the one listed ended or expired: the commit releases it first).
  const GangCandidates::Head* best = nullptr;
  const GangClass* best_class = nullptr;
  for (const auto& h : c.heads) {
    const GangClass* cls = class_of(eligible, h.class_id);
    if (!cls || expired(h.expires_at)) continue;
    if (h.retry_at && *h.retry_at > c.now_ms) continue;  // backing off: its workers run what fits meanwhile
    if (!h.gang_label.empty() && cls->label_value.empty()) continue;
    if (!best || h.score < best->score) best = &h, best_class = cls;
  }
  if (!best) return {GangPick::Kind::none, "", nullptr, expired_heads};
  return {GangPick::Kind::form, best->job_id, best_class, expired_heads};
}

}  // namespace ojs::broker
