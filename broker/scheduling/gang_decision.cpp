#include "broker/scheduling/gang_decision.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "broker/scheduling/elastic_share.hpp"
#include "broker/scheduling/fair_order.hpp"
#include "broker/store/priority_score.hpp"

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
  int held = 0;                 // members the picked gang holds (a forming gang's)
  std::string tenant;           // the picked gang's tenant
};

Placed join_or_form(const GangCandidates& c, const std::vector<GangClass>& eligible, const std::string& worker_id,
                    const std::vector<std::string>& expired_heads) {
  const auto expired = [&](const std::optional<std::int64_t>& at) { return at && *at <= c.now_ms; };
  const GangPick none{GangPick::Kind::none, "", nullptr, expired_heads};
  if (c.forming && c.forming->state == "available" && !c.forming->workers_json.empty() && !expired(c.forming->expires_at)) {
    const auto& f = *c.forming;
    const GangClass* cls = class_of(eligible, f.class_id);
    // Held by it already: the commit answers with the worker's rank, whatever it may take now.
    if (holds(f.workers_json, worker_id)) return {{GangPick::Kind::join, f.id, cls, expired_heads}, f.score, true, 0, ""};
    if (!cls) return {none, std::nullopt, false, 0, ""};
    if (!f.gang_label.empty() && (cls->label_value.empty() || cls->label_value != f.first_label)) return {none, std::nullopt, false, 0, ""};
    return {{GangPick::Kind::join, f.id, cls, expired_heads}, f.score, false, static_cast<int>(members_of(f.workers_json).size()),
            f.tenant};
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
  if (!best) return {none, std::nullopt, false, 0, ""};
  return {{GangPick::Kind::form, best->job_id, best_class, expired_heads}, best->score, false, 0, best->tenant};
}

// A running elastic gang this worker may grow, with the class it joins as and its size.
struct Growable {
  const GangCandidates::Growing* gang;
  const GangClass* cls;
  int members;
};

// The running elastic gangs this worker may grow, first in the queue's order first.
std::vector<Growable> growables(const GangCandidates& c, const std::vector<GangClass>& eligible, const std::string& worker_id) {
  std::vector<Growable> out;
  for (const auto& g : c.growing) {
    if (g.state != "active" || g.acked) continue;
    const GangClass* cls = class_of(eligible, g.class_id);
    if (!cls) continue;
    const auto members = members_of(g.workers_json);
    if (members.empty() || static_cast<int>(members.size()) >= g.max_size) continue;
    if (std::find(members.begin(), members.end(), worker_id) != members.end()) continue;
    if (!g.gang_label.empty() && (cls->label_value.empty() || cls->label_value != g.first_label)) continue;
    out.push_back({&g, cls, static_cast<int>(members.size())});
  }
  std::stable_sort(out.begin(), out.end(), [](const Growable& a, const Growable& b) { return a.gang->score < b.gang->score; });
  return out;
}

// A score's priority band: under `fair` (a layout) its class band, whatever its
// tenant's slot, so gangs of different tenants are equals. A score from before the
// queue turned fair keeps its own band, apart from the fair ones.
long long band_of(double score, const std::optional<FairLayout>& fair) {
  if (fair)
    if (const int class_band = fair_class_band(*fair, score); class_band >= 0) return class_band;
  long long band = -1;
  try {
    band = unpack_score(score).band;
  } catch (const std::out_of_range&) {
  }
  return fair ? -2 - band : band;
}

// Elastic gangs of one band share the nodes (elastic_share.hpp): of the growing gangs
// in the band of `first` (the queue's order's pick) and the elastic gang to join or
// form in that band, the one furthest below its share takes the worker. The tenants'
// shares are read only when gangs of several tenants compete.
GangPick share_between_equals(const Placed& placed, const std::vector<Growable>& grow, const std::set<std::string>& elastic,
                              const GangPick& first, double first_score, const std::vector<std::string>& expired,
                              const std::optional<FairLayout>& fair, const TenantShares& tenant_shares) {
  const long long band = band_of(first_score, fair);
  std::vector<ElasticContender> contenders;
  std::vector<GangPick> picks;
  const bool placed_elastic = placed.pick.kind != GangPick::Kind::none && placed.pick.cls && placed.score &&
                              elastic.count(placed.pick.cls->id) && band_of(*placed.score, fair) == band;
  if (placed_elastic) {
    const int held = placed.pick.kind == GangPick::Kind::join ? placed.held : 0;
    contenders.push_back({placed.pick.job_id, held, *placed.score, placed.tenant});
    picks.push_back(placed.pick);
  }
  for (const auto& g : grow) {
    if (band_of(g.gang->score, fair) != band) continue;
    contenders.push_back({g.gang->id, g.members, g.gang->score, g.gang->tenant});
    picks.push_back({GangPick::Kind::grow, g.gang->id, g.cls, expired});
  }
  if (contenders.size() < 2) return first;
  const bool several_tenants = std::any_of(contenders.begin(), contenders.end(),
                                           [&](const ElasticContender& c) { return c.tenant != contenders.front().tenant; });
  const auto shares = several_tenants && tenant_shares ? tenant_shares() : std::nullopt;
  return picks[furthest_below_share(contenders, shares ? &*shares : nullptr)];
}

}  // namespace

GangPick decide_gang(const GangCandidates& c, const std::vector<GangClass>& eligible, const std::string& worker_id,
                     const RivalScore& rival, const std::set<std::string>& elastic, const TenantShares& shares, bool may_grow) {
  std::vector<std::string> expired_heads;  // discarded by the commit, as met (the expiry sweep would, later)
  for (const auto& h : c.heads)
    if (h.expires_at && *h.expires_at <= c.now_ms) expired_heads.push_back(h.job_id);
  Placed placed = join_or_form(c, eligible, worker_id, expired_heads);
  if (placed.final || !may_grow) return placed.pick;
  const auto grow = growables(c, eligible, worker_id);
  if (grow.empty()) return placed.pick;
  const GangCandidates::Growing* best = grow.front().gang;
  // A gang to join or form ahead of the growing one takes the worker (one without a
  // known place is taken as first: a forming gang holds workers until it starts).
  const bool placed_first = placed.pick.kind != GangPick::Kind::none && (!placed.score || *placed.score < best->score);
  if (placed_first && (!placed.score || !placed.pick.cls || !elastic.count(placed.pick.cls->id))) return placed.pick;
  const GangPick first = placed_first ? placed.pick : GangPick{GangPick::Kind::grow, best->id, grow.front().cls, expired_heads};
  const GangPick pick =
      share_between_equals(placed, grow, elastic, first, placed_first ? *placed.score : best->score, expired_heads,
                           c.fair_layout_json.empty() ? std::nullopt : std::optional(fair_layout_from(c.fair_layout_json)), shares);
  if (pick.kind != GangPick::Kind::grow || !rival) return pick;
  const auto grown = std::find_if(grow.begin(), grow.end(), [&](const Growable& g) { return g.gang->id == pick.job_id; });
  if (const auto other = rival(); other && *other < grown->gang->score) return placed.pick;  // the plain claim takes the worker
  return pick;
}

}  // namespace ojs::broker
