#include "ojs/ml/diagnosis.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace ojs::ml {
namespace {

struct Tally {
  int count = 0;
  VerdictCode code = VerdictCode::ok;  // worker_code() over this predicate's refusals
  std::string sample_reason, sample_worker;
  std::map<std::string, int> summaries;  // the most common one is reported
  std::string summary() const {
    auto best = std::max_element(summaries.begin(), summaries.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    return best == summaries.end() ? std::string() : best->first;
  }
};

struct Summary {
  int seen = 0, eligible = 0;
  VerdictCode code = VerdictCode::unresolvable;  // fleet_code() over the workers'
  std::map<std::string, int> by_code;            // workers per verdict code
  std::vector<std::pair<std::string, Tally>> by_predicate;  // highest count first
  std::string message;
};

Summary summarise(const std::vector<WorkerJudgement>& records) {
  Summary s;
  std::map<std::string, Tally> tallies;
  for (const auto& rec : records) {
    ++s.seen;
    if (rec.judgement.eligible()) ++s.eligible;
    const VerdictCode worker = rec.judgement.code();
    s.code = s.seen == 1 ? worker : fleet_code(s.code, worker);
    ++s.by_code[std::string(to_string(worker))];
    for (const auto& r : rec.judgement.refusals) {
      Tally& t = tallies[r.predicate];
      t.code = worker_code(t.code, r.code);
      if (t.count++ == 0) {
        t.sample_reason = r.reason;
        t.sample_worker = rec.worker_id;
      }
      ++t.summaries[r.summary.empty() ? r.reason : r.summary];
    }
  }
  s.by_predicate.assign(tallies.begin(), tallies.end());
  std::stable_sort(s.by_predicate.begin(), s.by_predicate.end(),
                   [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  if (s.seen == 0) s.code = VerdictCode::wait;  // nobody judged it yet
  s.message = std::to_string(s.eligible) + "/" + std::to_string(s.seen) + " workers";
  if (s.seen == 0) {
    s.message += ": no worker has fetched";
  } else if (s.by_predicate.empty()) {
    s.message += " eligible";
  } else {
    std::string sep = ": ";
    for (const auto& [name, t] : s.by_predicate) {
      s.message += sep + std::to_string(t.count) + " " + t.summary();
      sep = ", ";
    }
  }
  // The verdict ends the message ("... [unresolvable]"); readers anchored on "N/M workers" keep working.
  if (s.seen > 0 && s.code != VerdictCode::ok) s.message += " [" + std::string(to_string(s.code)) + "]";
  return s;
}

}  // namespace

nlohmann::json diagnose(const std::vector<WorkerJudgement>& records) {
  Summary s = summarise(records);
  nlohmann::json by = nlohmann::json::object();
  for (const auto& [name, t] : s.by_predicate)
    by[name] = {{"count", t.count}, {"code", to_string(t.code)}, {"sample_reason", t.sample_reason}, {"summary", t.summary()},
                {"sample_worker", t.sample_worker}};
  return {{"workers_seen", s.seen}, {"eligible", s.eligible}, {"code", to_string(s.code)}, {"by_code", s.by_code},
          {"by_predicate", by}, {"message", s.message}};
}

std::string diagnosis_message(const std::vector<WorkerJudgement>& records) { return summarise(records).message; }

}  // namespace ojs::ml
