#include "broker/scheduling/gang_decision.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace ojs::broker {

namespace {

const GangClass* class_of(const std::vector<GangClass>& eligible, const std::string& id) {
  const auto it = std::find_if(eligible.begin(), eligible.end(), [&](const GangClass& c) { return c.id == id; });
  return it == eligible.end() ? nullptr : &*it;
}

// The worker ids of a gang's members; empty when the JSON is not a list.
std::vector<std::string> members_of(const std::string& workers_json) {
  std::vector<std::string> out;
  const auto workers = nlohmann::json::parse(workers_json, nullptr, false);
  if (!workers.is_array()) return out;
  for (const auto& w : workers)
    if (w.is_string()) out.push_back(w.get<std::string>());
  return out;
}

bool holds(const std::string& workers_json, const std::string& worker_id) {
  const auto members = members_of(workers_json);
  return std::find(members.begin(), members.end(), worker_id) != members.end();
}

// The join or form decision, as it was before gangs could grow.
struct Placed {
  GangPick pick;
  std::optional<double> score;  // the picked gang's place in the queue (none: unknown, taken as first)
  bool final = false;           // the worker is held by the forming gang: the commit answers it
};

Placed join_or_form(const GangCandidates& c, const std::vector<GangClass>& eligible, const std::string& worker_id,
                    const std::vector<std::string>& expired_heads) {
  const auto expired = [&](const std::optional<std::int64_t>& at) { return at && *at <= c.now_ms; };
  const GangPick none{GangPick::Kind::none, "", nullptr, expired_heads};
  if (c.forming && c.forming->state == "available" && !c.forming->workers_json.empty() && !expired(c.forming->expires_at)) {
    const auto& f = *c.forming;
    const GangClass* cls = class_of(eligible, f.class_id);
    // Held by it already: the commit answers with the worker's rank, whatever it may take now.
    if (holds(f.workers_json, worker_id)) return {{GangPick::Kind::join, f.id, cls, expired_heads}, f.score, true};
    if (!cls) return {none, {}, false};
    if (!f.gang_label.empty() && (cls->label_value.empty() || cls->label_value != f.first_label)) return {none, {}, false};
    return {{GangPick::Kind::join, f.id, cls, expired_heads}, f.score, false};
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
  if (!best) return {none, {}, false};
  return {{GangPick::Kind::form, best->job_id, best_class, expired_heads}, best->score, false};
}

// The best running elastic gang this worker may grow; null when none.
const GangCandidates::Growing* growable(const GangCandidates& c, const std::vector<GangClass>& eligible,
                                        const std::string& worker_id, const GangClass** cls_out) {
  const GangCandidates::Growing* best = nullptr;
  for (const auto& g : c.growing) {
    if (g.state != "active" || g.acked) continue;
    const GangClass* cls = class_of(eligible, g.class_id);
    if (!cls) continue;
    const auto members = members_of(g.workers_json);
    if (members.empty() || static_cast<int>(members.size()) >= g.max_size) continue;
    if (std::find(members.begin(), members.end(), worker_id) != members.end()) continue;
    if (!g.gang_label.empty() && (cls->label_value.empty() || cls->label_value != g.first_label)) continue;
    if (!best || g.score < best->score) best = &g, *cls_out = cls;
  }
  return best;
}

}  // namespace

GangPick decide_gang(const GangCandidates& c, const std::vector<GangClass>& eligible, const std::string& worker_id,
                     const RivalScore& rival) {
  std::vector<std::string> expired_heads;  // discarded by the commit, as met (the expiry sweep would, later)
  for (const auto& h : c.heads)
    if (h.expires_at && *h.expires_at <= c.now_ms) expired_heads.push_back(h.job_id);
  Placed placed = join_or_form(c, eligible, worker_id, expired_heads);
  if (placed.final) return placed.pick;
  const GangClass* grow_class = nullptr;
  const auto* grow = growable(c, eligible, worker_id, &grow_class);
  if (!grow) return placed.pick;
  // A gang to join or form ahead of the growing one takes the worker (one without a
  // known place is taken as first: a forming gang holds workers until it starts).
  if (placed.pick.kind != GangPick::Kind::none && (!placed.score || *placed.score < grow->score)) return placed.pick;
  if (rival) {
    if (const auto other = rival(); other && *other < grow->score) return placed.pick;  // the plain claim takes the worker
  }
  return {GangPick::Kind::grow, grow->id, grow_class, expired_heads};
}

}  // namespace ojs::broker
