// Two teams sharing 16 GPUs, each with a nominal budget of 8 and bursty work (each
// idle about half the time): hard budgets against a cohort. The cohort's shares and
// its reclaim victims are the broker's own rules (scheduling/cohort_shares.cpp,
// preemption/victims.cpp choose_reclaim_victims), run every controller pass; the
// claim is the budget check the broker's commit makes (a team's GPUs in use against
// its share). Jobs take one GPU; a preempted job leaves at the end of its grace
// period and loses the work since its last checkpoint. Prints utilisation (of the
// cluster, and of what was asked for), each team's p50/p90 wait, and the longest wait
// of a job that arrived while its team was below its nominal share. Exits 1, printing
// OVER TOTAL, if the cohort ever holds more than 16 GPUs.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "broker/preemption/victims.hpp"
#include "broker/scheduling/cohort_shares.hpp"

using namespace ojs::broker;

namespace {

struct Job {
  int id = 0;
  double arrived = 0, remaining = 0, since_checkpoint = 0;
  bool within_nominal = false;  // its team held less than its nominal share when it arrived
  bool borrowed = false, leaving = false;
  double leave_at = 0;
  bool started = false;  // its first start is its wait's end
};

struct Team {
  std::string name;
  long long nominal = 8;
  std::deque<Job> waiting;
  std::vector<Job> running;
  std::vector<double> waits, nominal_waits;
  long long share = 8;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

struct Result {
  double util = 0, util_of_demand = 0;
  bool over = false;
  std::vector<Team> teams;
  long long preemptions = 0;
  double lost_gpu_h = 0;
};

Result run(bool cohort, unsigned seed, double hours, double grace_s, double checkpoint_s, double busy_load) {
  std::mt19937 rng(seed);
  const double step = 10, horizon = hours * 3600, total = 16;
  std::vector<Team> teams(2);
  teams[0].name = "team-a";
  teams[1].name = "team-b";
  std::exponential_distribution<double> duration(1.0 / 1800);  // mean 30 min
  // Each team alternates busy and idle periods of 1-3 h; busy, it submits
  // busy_load GPUs' worth of work (more than its nominal 8: it would use the idle team's).
  std::vector<double> switch_at{0, 0};
  std::vector<bool> busy{true, false};
  std::uniform_real_distribution<double> period(3600, 3 * 3600);
  const double busy_rate = busy_load / 1800;  // arrivals per second of 30-minute jobs
  int next_id = 0;
  double used_s = 0, demand_s = 0;
  Result r;
  for (double t = 0; t < horizon; t += step) {
    for (std::size_t i = 0; i < teams.size(); ++i) {
      if (t >= switch_at[i]) {
        busy[i] = !busy[i];
        switch_at[i] = t + period(rng);
      }
      if (!busy[i]) continue;
      std::poisson_distribution<int> arrivals(busy_rate * step);
      for (int k = arrivals(rng); k > 0; --k) {
        Job j;
        j.id = next_id++;
        j.arrived = t;
        j.remaining = std::max(60.0, duration(rng));
        j.within_nominal = static_cast<long long>(teams[i].running.size() + teams[i].waiting.size()) < teams[i].nominal;
        teams[i].waiting.push_back(j);
      }
    }
    // Running jobs progress; preempted ones leave at the end of their grace.
    for (auto& team : teams) {
      std::vector<Job> still;
      for (auto& j : team.running) {
        if (j.leaving && t >= j.leave_at) {
          r.lost_gpu_h += j.since_checkpoint / 3600;
          j.remaining += j.since_checkpoint;
          j.since_checkpoint = 0;
          j.leaving = j.borrowed = false;
          team.waiting.push_front(j);
          continue;
        }
        j.remaining -= step;
        j.since_checkpoint = std::fmod(j.since_checkpoint + step, checkpoint_s);
        if (j.remaining > 0) still.push_back(j);
      }
      team.running = std::move(still);
    }
    // The controller's pass.
    if (cohort) {
      std::vector<CohortMember> members;
      for (auto& team : teams) {
        long long waiting = static_cast<long long>(team.waiting.size());
        members.push_back({team.name, team.nominal, std::nullopt, std::nullopt, static_cast<long long>(team.running.size()), waiting, team.share});
      }
      const auto shares = cohort_shares(members);
      for (std::size_t i = 0; i < teams.size(); ++i) {
        teams[i].share = shares[i].limit;
        long long leaving = 0;
        std::vector<RunningJob> view;
        for (const auto& j : teams[i].running) {
          leaving += j.leaving;
          RunningJob v;
          v.job_id = std::to_string(j.id);
          v.gpus = 1;
          v.borrowed_gpus = j.borrowed;
          v.preemptible = true;
          v.preempting = j.leaving;
          v.lost_ms = static_cast<std::int64_t>(j.since_checkpoint * 1000);
          view.push_back(v);
        }
        if (shares[i].reclaim - leaving <= 0) continue;
        if (const auto choice = choose_reclaim_victims(shares[i].reclaim - leaving, view))
          for (const auto& v : choice->victims)
            for (auto& j : teams[i].running)
              if (std::to_string(j.id) == v.job_id) {
                j.leaving = true;
                j.leave_at = t + grace_s;
                ++r.preemptions;
              }
      }
    }
    // Claims: FIFO per team, alternating, while the team is within its share and GPUs are free.
    long long in_use = 0;
    for (const auto& team : teams) in_use += static_cast<long long>(team.running.size());
    for (bool placed = true; placed;) {
      placed = false;
      for (auto& team : teams) {
        const long long limit = cohort ? team.share : team.nominal;
        const auto held = static_cast<long long>(team.running.size());
        if (team.waiting.empty() || held >= limit || in_use >= total) continue;
        Job j = team.waiting.front();
        team.waiting.pop_front();
        j.borrowed = held + 1 > team.nominal;
        if (!j.started) {
          team.waits.push_back(t - j.arrived);
          if (j.within_nominal) team.nominal_waits.push_back(t - j.arrived);
        }
        j.started = true;
        team.running.push_back(j);
        ++in_use;
        placed = true;
      }
    }
    if (in_use > total) r.over = true;
    long long demand = 0;
    for (const auto& team : teams) demand += static_cast<long long>(team.running.size() + team.waiting.size());
    used_s += static_cast<double>(in_use) * step;
    demand_s += std::min<double>(total, static_cast<double>(demand)) * step;
  }
  r.util = used_s / (total * horizon);
  r.util_of_demand = demand_s > 0 ? used_s / demand_s : 1;
  r.teams = std::move(teams);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Two teams, 16 GPUs, nominal 8 each: hard budgets against a cohort (the broker's cohort rules)"};
  unsigned seed = 1;
  double hours = 200, grace_s = 60, checkpoint_s = 600, busy_load = 10;
  app.add_option("--seed", seed, "Random seed");
  app.add_option("--hours", hours, "Simulated hours");
  app.add_option("--grace-s", grace_s, "Preemption grace period (s)");
  app.add_option("--checkpoint-s", checkpoint_s, "Checkpoint interval of the jobs (s)");
  app.add_option("--busy-load", busy_load, "GPUs' worth of work a busy team submits");
  CLI11_PARSE(app, argc, argv);
  bool over = false;
  std::printf("%-8s %6s %10s %6s %9s %9s %9s %9s %13s %13s\n", "budgets", "util", "of-demand", "preem", "lost GPUh", "a p50 m",
              "a p90 m", "b p90 m", "a nominal max", "b nominal max");
  for (const bool cohort : {false, true}) {
    const auto r = run(cohort, seed, hours, grace_s, checkpoint_s, busy_load);
    over = over || r.over;
    const auto& a = r.teams[0];
    const auto& b = r.teams[1];
    std::printf("%-8s %5.1f%% %9.1f%% %6lld %9.1f %9.1f %9.1f %9.1f %12.1fm %12.1fm\n", cohort ? "cohort" : "hard", 100 * r.util,
                100 * r.util_of_demand, r.preemptions, r.lost_gpu_h, percentile(a.waits, 0.5) / 60, percentile(a.waits, 0.9) / 60,
                percentile(b.waits, 0.9) / 60, percentile(a.nominal_waits, 1.0) / 60, percentile(b.nominal_waits, 1.0) / 60);
  }
  if (over) {
    std::printf("OVER TOTAL: the cohort held more than its GPUs\n");
    return 1;
  }
  return 0;
}
