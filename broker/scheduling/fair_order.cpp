#include "broker/scheduling/fair_order.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "broker/scheduling/queue_budget.hpp"
#include "broker/store/priority_score.hpp"

namespace ojs::broker {

namespace {

constexpr double kLn2 = 0.69314718055994531;
constexpr std::int64_t kDefaultHalfLifeMs = 3600000;

std::vector<double> numbers(const std::string& raw, std::size_t n) {
  std::vector<double> v;
  std::istringstream in(raw);
  std::string x;
  while (in >> x) {
    char* end = nullptr;
    const double d = std::strtod(x.c_str(), &end);
    v.push_back(end == x.c_str() ? 0 : d);
  }
  v.resize(std::max(v.size(), n), 0);
  return v;
}

}  // namespace

// Brought to `now` as _lib_accounting.lua's usage_decayed and usage_run_at bring
// the values (the held value's r also holds ended attempts' use until the fold
// moves it to the decayed one).
FairUse fair_use_of(const FairUsage::Usage& u, std::int64_t now, std::int64_t half_life) {
  auto d = numbers(u.decayed, 5);  // at u1..u4
  auto r = numbers(u.held, 7);     // n1..n4 at r1 r2
  const double t = static_cast<double>(now);
  if (half_life <= 0) {
    for (int i = 1; i < 5; ++i) d[i] = 0;
  } else if (t > d[0]) {
    const double f = std::pow(2.0, -(t - d[0]) / static_cast<double>(half_life));
    for (int i = 1; i < 5; ++i) d[i] *= f;
  }
  if (half_life <= 0 || r[4] == 0) {
    r[5] = r[6] = 0;
  } else if (t > r[4]) {
    const double f = std::pow(2.0, -(t - r[4]) / static_cast<double>(half_life));
    const double k = static_cast<double>(half_life) * 1000 / kLn2 * (1 - f);
    r[5] = r[5] * f + r[0] * k;
    r[6] = r[6] * f + r[1] * k;
  }
  FairUse v;
  v.used[0] = d[1] + r[5] / 1e6;
  v.used[1] = d[2] + r[6] / 1e6;
  v.held[0] = r[0];
  v.held[1] = r[1];
  return v;
}

double FairLayout::weight(const std::string& tenant) const {
  const auto it = weights.find(tenant);
  return it == weights.end() ? default_weight : it->second;
}

FairLayout fair_layout_from(const std::string& text) {
  FairLayout out;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return out;
  out.base = j.value("base", 4096LL);
  out.slots = j.value("slots", 1);
  if (j.contains("default_weight") && j["default_weight"].is_number()) out.default_weight = j["default_weight"].get<double>();
  out.by_tenant = j.value("order", std::string("tenant")) != "class";
  if (j.contains("tenants") && j["tenants"].is_object())
    for (const auto& [name, entry] : j["tenants"].items())
      if (entry.is_array() && entry.size() > 1 && entry[1].is_number()) out.weights[name] = entry[1].get<double>();
  return out;
}

std::int64_t fair_half_life_ms(const std::string& configured) {
  if (configured.empty()) return kDefaultHalfLifeMs;
  char* end = nullptr;
  const double v = std::strtod(configured.c_str(), &end);
  return end == configured.c_str() ? kDefaultHalfLifeMs : static_cast<std::int64_t>(v);
}

FairShares fair_shares_from(const FairLayout& layout, const std::vector<FairUsage::Usage>& usage, std::int64_t now_ms,
                            std::int64_t half_life_ms) {
  std::map<std::string, FairUse> views;
  for (const auto& u : usage) views[u.name] = fair_use_of(u, now_ms, half_life_ms);
  const FairUse q = views["*"];
  FairShares out;
  out.default_weight = layout.default_weight;
  out.by_tenant = layout.by_tenant;
  // The queue's dominant resource: GPUs when it uses or holds any, else CPU cores (a
  // CPU-only queue). Not the largest fraction per tenant (DRF over capacity): the
  // order knows no capacity, and over the queue's own totals a lightly used resource
  // (a few CPU jobs in a GPU queue) would make one job a whole share (the simulator's
  // trace put team-a at 0.20 instead of 0.25 that way).
  int i = -1;
  for (int r = 0; r < 2 && i < 0; ++r)
    if (q.used[r] > 0 || q.held[r] > 0) i = r;
  out.resource = i + 1;
  out.queue_held = i < 0 ? 0 : q.held[i];
  for (const auto& [name, v] : views) {
    if (name == "*") continue;
    FairShares::Tenant t;
    t.weight = layout.weight(name);
    if (i >= 0) {
      t.used = q.used[i] > 0 ? v.used[i] / q.used[i] : 0;
      t.held = v.held[i];
    }
    out.tenants[name] = t;
  }
  for (const auto& [name, w] : layout.weights)
    if (!out.tenants.count(name)) out.tenants[name] = {w, 0, 0};
  return out;
}

std::optional<FairShares> fair_shares_of(const std::optional<PreemptionStore::FairUsageRead>& read, bool any_order) {
  if (!read) return std::nullopt;
  const FairLayout layout = fair_layout_from(read->fair.layout_json);
  if (!layout.by_tenant && !any_order) return std::nullopt;
  return fair_shares_from(layout, read->fair.usage, read->now_ms, fair_half_life_ms(read->fair.half_life_ms));
}

double fair_share_of(const FairShares& shares, const std::string& tenant) {
  return tenant.empty() ? 0 : shares.share(tenant);
}

void fair_hold(FairShares& shares, const std::string& tenant, int gpus, std::optional<double> cpus) {
  // Before any use the resource is the first one held: GPUs, else CPU cores.
  if (shares.resource == 0) shares.resource = gpus > 0 ? 1 : 2;
  fair_hold_amount(shares, tenant, shares.resource == 1 ? gpus : cpus.value_or(1));
}

void fair_hold_amount(FairShares& shares, const std::string& tenant, double amount) {
  shares.queue_held += amount;
  auto it = shares.tenants.find(tenant);
  if (it == shares.tenants.end()) it = shares.tenants.emplace(tenant, FairShares::Tenant{shares.default_weight, 0, 0}).first;
  it->second.held += amount;
}

namespace {

constexpr double kNoEnd = std::numeric_limits<double>::infinity();

struct BandSlot {
  int class_band = -1;  // -1: below the fair bands (an earlier policy's score)
  int slot = 0;
};
BandSlot band_slot_of(const FairLayout& layout, double score) {
  const auto band = static_cast<long long>(std::floor(score / kScoreBand));
  if (band < layout.base) return {};
  const long long cb = (band - layout.base) / kMaxFairSlots;
  return {static_cast<int>(cb), static_cast<int>(band - layout.base - cb * kMaxFairSlots)};
}

}  // namespace

int fair_class_band(const FairLayout& layout, double score) { return band_slot_of(layout, score).class_band; }

namespace {

// The score a (class band, slot) range ends before: the slot's own band, the
// last named slot's up to the next class band (it holds the slots of earlier
// weights too), nothing above the last class band's.
double slot_end(const FairLayout& layout, int class_band, int slot) {
  const long long first = layout.base + static_cast<long long>(class_band) * kMaxFairSlots + slot;
  if (slot >= layout.slots && class_band >= 2) return kNoEnd;
  const long long end = slot >= layout.slots ? layout.base + (class_band + 1LL) * kMaxFairSlots : first + 1;
  return static_cast<double>(end) * kScoreBand;
}

double slot_start(const FairLayout& layout, int class_band, int slot) {
  return static_cast<double>(layout.base + static_cast<long long>(class_band) * kMaxFairSlots + slot) * kScoreBand;
}

}  // namespace

std::vector<FairCandidate> fair_candidates_of(const ReadyRange& range, const FairLayout& layout, int depth) {
  std::vector<FairCandidate> out;
  depth = std::max(depth, 1);
  const auto list = [&](int class_band, int slot, std::vector<FairCandidate> jobs) {
    for (auto& j : jobs) {
      j.class_band = class_band;
      j.slot = slot;
      out.push_back(std::move(j));
    }
  };
  auto head = range(-kNoEnd, kNoEnd, 1);
  if (head.empty()) return out;
  BandSlot at = band_slot_of(layout, head.front().score);
  if (at.class_band < 0) {
    list(-1, 0, range(-kNoEnd, kNoEnd, 32));
    return out;
  }
  if (layout.by_tenant) {
    std::set<int> seen;
    for (int left = layout.slots + 1;;) {
      at = band_slot_of(layout, head.front().score);
      const int slot = std::min(at.slot, layout.slots);
      const double end = slot_end(layout, at.class_band, slot);
      if (seen.insert(slot).second) {
        list(at.class_band, slot, depth > 1 ? range(head.front().score, end, depth) : std::move(head));
        if (--left == 0) break;
      }
      if (end == kNoEnd) break;
      head = range(end, kNoEnd, 1);
      if (head.empty()) break;
    }
    return out;
  }
  while (true) {
    for (int s = std::min(at.slot, layout.slots); s <= layout.slots; ++s)
      list(at.class_band, s,
           range(s == at.slot ? head.front().score : slot_start(layout, at.class_band, s), slot_end(layout, at.class_band, s), depth));
    if (at.class_band >= 2) break;
    head = range(static_cast<double>(layout.base + (at.class_band + 1LL) * kMaxFairSlots) * kScoreBand, kNoEnd, 1);
    if (head.empty()) break;
    at = band_slot_of(layout, head.front().score);
  }
  return out;
}

FairOffer fair_offer(const std::string& class_id, const std::vector<FairCandidate>& jobs, const FairLayout& layout,
                     const FairShares& shares, const TenantQuotaUse* quotas, int gpus, const std::vector<bool>& taken) {
  FairOffer best;
  const auto over = [&](const FairCandidate& j) -> std::optional<BudgetBlock> {
    if (!quotas || gpus <= 0) return std::nullopt;
    return tenant_quota_block(*quotas, class_id, j.tenant, gpus);
  };
  std::map<std::pair<int, int>, bool> band_done;  // (class band, slot): its first untaken job was judged
  int class_band_found = -2;                      // class order: the first class band that offered a job
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (taken[i]) continue;
    const FairCandidate& j = jobs[i];
    if (j.class_band < 0) {  // scored under an earlier policy: served first, in score order
      if (auto block = over(j)) {
        if (!best.first_block) best.first_block = std::move(block);
        continue;
      }
      best.job = &j;
      best.k1 = best.k2 = -1;
      best.seq = j.score;
      return best;
    }
    if (!band_done.emplace(std::make_pair(j.class_band, j.slot), true).second) continue;
    if (!layout.by_tenant && class_band_found >= 0 && j.class_band != class_band_found) break;
    if (auto block = over(j)) {
      if (!best.first_block) best.first_block = std::move(block);
      continue;
    }
    const double share = fair_share_of(shares, j.tenant);
    const double band = std::floor(j.score / kScoreBand);
    const double seq = j.score - band * kScoreBand;
    const double k1 = layout.by_tenant ? share : j.class_band;
    const double k2 = layout.by_tenant ? j.class_band : share;
    if (!best.job || k1 < best.k1 || (k1 == best.k1 && (k2 < best.k2 || (k2 == best.k2 && seq < best.seq)))) {
      best.job = &j;
      best.k1 = k1;
      best.k2 = k2;
      best.seq = seq;
    }
    if (!layout.by_tenant) class_band_found = j.class_band;
  }
  return best;
}

}  // namespace ojs::broker
