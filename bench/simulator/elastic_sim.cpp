#include "simulator/elastic_sim.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <queue>
#include <set>
#include <tuple>

#include "broker/config.hpp"
#include "broker/preemption/elastic_share_shrink.hpp"
#include "broker/scheduling/gang_classes.hpp"
#include "broker/scheduling/scheduler.hpp"
#include "ojs/ml/capabilities.hpp"
#include "ojs/ml/requirement_class.hpp"
#include "simulator/broker_queue.hpp"

namespace ojs::bench {

namespace {

enum class EventType { arrival, finish, wake, leave };

// How long freed capacity stays held past the leave's deadline: the broker's default.
const double kCapacityHold_s = static_cast<double>(broker::BrokerConfig{}.capacity_hold_ms) / 1000;

struct Event {
  double t;
  long long seq;  // ties broken by insertion order: deterministic
  EventType type;
  int job;
  int epoch;  // finish: the gang's; leave: the leaving member's node
  bool operator>(const Event& o) const { return std::tie(t, seq) > std::tie(o.t, o.seq); }
};

struct Node {
  std::string id;
  enum class State { idle, held, running } state = State::idle;
  int job = -1;  // held: the forming gang; running: the gang it is a member of
  bool leaving = false;  // running: told to leave its elastic gang
  int held_for = -1;     // freed by a leave for this waiting gang: only its class is offered here
  double held_until = 0; // until then (the broker's capacity hold: the leave's deadline + capacity_hold_ms)
};

struct Gang {
  bool started = false, done = false;
  int size = 0;  // the world size its members were told
  std::vector<int> members;  // node indexes
  int rendezvous = -1;       // the member at rank 0 (it never leaves)
  double remaining = 0;      // work left, in seconds on one node
  double progress_from = 0;  // progress resumes here (after a restart)
  double updated_at = 0;     // `remaining` is as of here
  int epoch = 0;             // its finish event's
};

class GangSimulation {
 public:
  GangSimulation(const std::vector<ElasticJob>& trace, const WorkerSpec& node, int nodes, const ElasticSimOptions& options)
      : trace_(trace), spec_(node), options_(options), gangs_(trace.size()), finish_s_(trace.size(), -1),
        scheduler_(scheduler_options(now_)) {
    for (int n = 0; n < nodes; ++n) nodes_.push_back({node.id + "-" + std::to_string(n)});
    fingerprint_ = ml::fingerprint(spec_.caps);
    for (const auto& j : trace) {
      jobs_.push_back(gang_job(j, options.mode, spec_.caps.gpu.count));
      gangs_[static_cast<std::size_t>(j.id)].remaining = j.work_s;
      push({j.arrival_s, 0, EventType::arrival, j.id, 0});
      last_arrival_ = std::max(last_arrival_, j.arrival_s);
    }
    BrokerQueueOptions q;
    q.redis_binary = options.redis_binary;
    queue_ = std::make_unique<BrokerQueue>(q);
  }

  ElasticResult run() {
    const auto wall_start = std::chrono::steady_clock::now();
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      account(e.t);
      now_ = e.t;
      queue_->advance(now_);  // Redis TIME is the simulated time
      handle(e);
      if (!events_.empty() && events_.top().t <= now_) continue;  // everything due now first, then one dispatch
      dispatch();
    }
    result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return finish();
  }

 private:
  // The broker's Scheduler as FETCH runs it, on the simulated clock.
  static broker::SchedulerOptions scheduler_options(const double& now) {
    broker::SchedulerOptions o;
    o.clock = [&now] { return BrokerQueue::redis_ms(now); };
    return o;
  }

  const std::vector<ElasticJob>& trace_;
  const WorkerSpec& spec_;
  ElasticSimOptions options_;
  std::vector<SimJob> jobs_;  // as pushed in options_.mode
  std::vector<Gang> gangs_;
  std::vector<double> finish_s_;
  std::vector<Node> nodes_;
  std::string fingerprint_;
  broker::ClassSet classes_;  // the queue's gang classes, as FETCH judges them
  std::set<int> running_;     // started gangs not done
  std::set<int> waiting_jobs_;  // arrived jobs whose gang has not started
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  long long event_seq_ = 0;
  std::size_t rotation_ = 0;
  double now_ = 0, last_arrival_ = 0;
  double busy_gpu_s_ = 0, useful_gpu_s_ = 0, held_gpu_s_ = 0, waiting_idle_gpu_s_ = 0;  // while jobs arrive
  JobsInSystem in_system_;
  ElasticResult result_;
  broker::Scheduler scheduler_;  // its clock reads now_
  std::unique_ptr<BrokerQueue> queue_;

  void push(Event e) {
    e.seq = event_seq_++;
    events_.push(e);
  }

  Gang& gang(int j) { return gangs_[static_cast<std::size_t>(j)]; }
  const ElasticJob& job(int j) const { return trace_[static_cast<std::size_t>(j)]; }

  void handle(const Event& e) {
    switch (e.type) {
      case EventType::arrival: {
        const auto& sj = jobs_[static_cast<std::size_t>(e.job)];
        queue_->push(e.job, sj);
        classes_.classes.emplace(sj.class_id, ml::requirement_class(sj.req).canonical);
        in_system_.arrive(now_);
        waiting_jobs_.insert(e.job);
        break;
      }
      case EventType::finish:
        if (gang(e.job).epoch == e.epoch && !gang(e.job).done) complete(e.job);
        break;
      case EventType::wake: break;  // the workers fetch again (a forming gang's hold or back-off lapsed)
      case EventType::leave: leave(e.job, e.epoch); break;
    }
  }

  // GPU-seconds from now_ to t, within the arrival window: in started gangs (busy),
  // of those making progress (useful), held by a forming gang (held), not in a
  // started gang while a job waits (waiting idle: held or free).
  void account(double t) {
    const double to = std::min(t, last_arrival_);
    if (to <= now_) return;
    const double gpus = spec_.caps.gpu.count;
    for (const auto& n : nodes_) {
      if (n.state == Node::State::held) held_gpu_s_ += gpus * (to - now_);
      if (n.state != Node::State::running && !waiting_jobs_.empty()) waiting_idle_gpu_s_ += gpus * (to - now_);
      if (n.state != Node::State::running) continue;
      busy_gpu_s_ += gpus * (to - now_);
      useful_gpu_s_ += gpus * std::max(0.0, to - std::max(now_, gang(n.job).progress_from));
    }
  }

  // ----- FETCH, through the broker -----

  // Every worker fetches (in rotating order) until a whole pass changes nothing: a
  // gang started by one member reaches the members it held on their next FETCH.
  void dispatch() {
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t k = 0; k < nodes_.size(); ++k) changed |= fetch(static_cast<int>((rotation_ + k) % nodes_.size()));
    }
    ++rotation_;
    if (options_.mode == GangMode::elastic && options_.share_shrink) shrink_for_waiting();
  }

  // Something an idle worker could get: a waiting gang, or a started elastic one below its max.
  bool anything_to_take() {
    if (!waiting_jobs_.empty()) return true;
    return std::any_of(running_.begin(), running_.end(), [&](int j) { return gang(j).size < job(j).max_nodes; });
  }

  bool fetch(int ni) {
    auto& n = nodes_[static_cast<std::size_t>(ni)];
    if (n.state == Node::State::running) return false;
    if (n.state == Node::State::idle && !anything_to_take()) return false;
    // A held worker's GPUs are held by its gang: the broker's verdicts refuse it every
    // class, and its FETCH only collects the gang once started.
    auto offered = n.state == Node::State::idle ? eligible_classes(n) : broker::GangClaimClasses{};
    const auto reply = queue_->claim_gang(n.id, offered.eligible, std::move(offered.elastic), n.held_for >= 0);
    if (reply.kind != GangFetch::Kind::none) n.held_for = -1;  // claimed: the capacity hold has served
    switch (reply.kind) {
      case GangFetch::Kind::held: {
        const bool changed = n.state != Node::State::held || n.job != reply.job;
        // The gang holds it at most its timeout: the workers fetch again when it lapses.
        if (n.state == Node::State::idle) push({now_ + jobs_[static_cast<std::size_t>(reply.job)].req.scheduling.gang_timeout_s + 0.001, 0, EventType::wake, reply.job, 0});
        n.state = Node::State::held;
        n.job = reply.job;
        return changed;
      }
      case GangFetch::Kind::started:
        join(ni, reply);
        return true;
      case GangFetch::Kind::none:
        if (n.state != Node::State::held) return false;
        // Released (the gang's hold timed out): it backs off as long as it held.
        push({now_ + jobs_[static_cast<std::size_t>(n.job)].req.scheduling.gang_timeout_s + 0.001, 0, EventType::wake, n.job, 0});
        n.state = Node::State::idle;
        n.job = -1;
        return true;
    }
    return false;
  }

  // The gang classes an idle worker may join, and which are elastic: the broker's
  // class verdicts, offered as FETCH's gang path offers them.
  broker::GangClaimClasses eligible_classes(Node& n) {
    if (n.held_for >= 0 && (gang(n.held_for).started || now_ >= n.held_until)) n.held_for = -1;  // started, or lapsed
    broker::WorkerView view{n.id, spec_.caps, fingerprint_, {}, {}};
    auto verdicts = scheduler_.judge(classes_, view);
    // The capacity guard's hold (capacity_guard_filter.cpp): the freed node takes only
    // the waiting gang's class until it starts.
    if (n.held_for >= 0)
      std::erase_if(verdicts, [&](const broker::ClassVerdict& v) { return v.class_id != jobs_[static_cast<std::size_t>(n.held_for)].class_id; });
    return broker::gang_claim_classes(verdicts, scheduler_, classes_, spec_.caps);
  }

  // ----- share shrink: the preemption controller's pass for waiting elastic gangs -----

  // The member on node ni as the broker's preemption sees it (running_jobs.cpp): a
  // member above its gang's minimum may leave (never the rendezvous); a gang's
  // size counts the members not already leaving.
  std::vector<broker::RunningJob> running_view(int ni) const {
    const auto& n = nodes_[static_cast<std::size_t>(ni)];
    if (n.state != Node::State::running) return {};
    const auto& g = gangs_[static_cast<std::size_t>(n.job)];
    const auto& req = jobs_[static_cast<std::size_t>(n.job)].req;
    broker::RunningJob r;
    r.job_id = std::to_string(n.job);
    r.queue = BrokerQueue::kQueue;
    r.worker_id = n.id;
    r.class_rank = broker::priority_class_rank(req);
    r.preemptible = req.scheduling.preemptible;
    r.preempting = n.leaving;
    r.gpus = spec_.caps.gpu.count;
    for (int d = 0; d < r.gpus; ++d) r.devices.push_back(d);
    r.grace_period_s = req.scheduling.grace_period_s;
    r.checkpoint_on_preempt = req.scheduling.checkpoint.on_preempt;
    r.lost_ms = static_cast<std::int64_t>(std::llround(std::max(0.0, now_ - g.progress_from) * 1000));
    if (req.hard.gang.elastic()) {
      const int leaving = static_cast<int>(std::count_if(g.members.begin(), g.members.end(),
                                                          [&](int m) { return nodes_[static_cast<std::size_t>(m)].leaving; }));
      r.gang_now = static_cast<int>(g.members.size()) - leaving;
      r.gang_min = req.hard.gang.size;
      r.gang_spare = r.gang_now - r.gang_min;
      r.leaves = !n.leaving && ni != g.rendezvous && r.gang_spare > 0;
    }
    return {r};
  }

  // Whether members already leave for waiting gang j, or nodes they freed are still held for it:
  // the controller plans for a preemptor with a hold in force no more (holds_in_force).
  bool freeing(int j) const {
    return std::any_of(nodes_.begin(), nodes_.end(), [&](const Node& n) { return n.held_for == j && (n.leaving || now_ < n.held_until); });
  }

  // Each class's first waiting elastic gang that the idle nodes cannot start gets
  // members of equal gangs above their share told to leave (broker::plan_share_shrink,
  // the controller's rule); the nodes they free are held for it.
  void shrink_for_waiting() {
    std::set<std::string> classes_seen;  // the controller plans for each class's head only
    const int forming = waiting_jobs_.empty() ? -1 : queue_->forming_gang();
    for (const int j : waiting_jobs_) {  // in arrival order: each class's ready order
      const auto& req = jobs_[static_cast<std::size_t>(j)].req;
      if (!classes_seen.insert(jobs_[static_cast<std::size_t>(j)].class_id).second) continue;
      if (freeing(j) || !req.hard.gang.elastic()) continue;
      std::vector<broker::PreemptionSite> open;
      std::vector<int> index;
      int held = 0;
      for (std::size_t ni = 0; ni < nodes_.size(); ++ni) {
        const auto& n = nodes_[ni];
        if (n.state == Node::State::held && n.job == j) { ++held; continue; }
        if (n.state == Node::State::held || n.held_for >= 0 || n.leaving) continue;  // kept for another gang
        open.push_back({&spec_.caps, {}});
        index.push_back(static_cast<int>(ni));
      }
      const int needed = req.hard.gang.size - held;
      if (needed <= 0) continue;
      const auto plan = broker::plan_share_shrink(
          {BrokerQueue::kQueue, broker::priority_class_rank(req), "", held, forming >= 0 && forming != j}, req, needed, open,
          [&](std::size_t k) { return running_view(index[k]); }, {}, {}, [](const std::string&) { return 1.0; });
      if (plan.freed.empty() || plan.fitting >= needed) continue;
      for (const auto& [site, choice] : plan.freed) {
        const int ni = index[site];
        auto& n = nodes_[static_cast<std::size_t>(ni)];
        for (const auto& v : choice.victims) {
          if (!queue_->mark_leaving(std::stoi(v.job_id), n.id, j, v.grace_period_s, v.checkpoint_on_preempt)) break;
          n.leaving = true;
          n.held_for = j;
          n.held_until = now_ + v.grace_period_s + kCapacityHold_s;
          push({n.held_until, 0, EventType::wake, j, 0});  // a hold that lapses: the controller may plan again
          ++result_.leaves;
          push({now_ + v.grace_period_s, 0, EventType::leave, n.job, ni});
        }
      }
    }
  }

  // The member on node ni is gone at its grace period's end: its worker releases the
  // job (gang_left.lua) and the gang runs on smaller, its members restarted.
  void leave(int j, int ni) {
    auto& n = nodes_[static_cast<std::size_t>(ni)];
    auto& g = gang(j);
    if (!n.leaving || n.job != j || g.done) return;
    progress_to_now(j);
    g.size = queue_->member_left(j, n.id);
    std::erase(g.members, ni);
    g.progress_from = now_ + options_.restart_s;
    ++result_.resizes;
    schedule_finish(j);
    n.state = Node::State::idle;
    n.job = -1;
    n.leaving = false;  // held_for stays: the node is kept for the gang it left for
  }

  // ----- running gangs -----

  // Worker ni is a member of a started gang at the world size its FETCH told it: the
  // gang starts, or it grows (a new world size: every member restarts).
  void join(int ni, const GangFetch& reply) {
    auto& n = nodes_[static_cast<std::size_t>(ni)];
    n.state = Node::State::running;
    n.job = reply.job;
    auto& g = gang(reply.job);
    g.members.push_back(ni);
    if (reply.rank == 0) g.rendezvous = ni;
    if (!g.started) {
      g.started = true;
      waiting_jobs_.erase(reply.job);
      g.size = reply.world_size;
      g.progress_from = g.updated_at = now_;
      running_.insert(reply.job);
    } else if (reply.world_size > g.size) {
      progress_to_now(reply.job);
      g.size = reply.world_size;
      g.progress_from = now_ + options_.restart_s;  // members resized at one instant restart once
      ++result_.resizes;
    } else {
      return;  // a held member collecting its started gang
    }
    schedule_finish(reply.job);
  }

  void progress_to_now(int j) {
    auto& g = gang(j);
    const double from = std::max(g.progress_from, g.updated_at);
    if (now_ > from) g.remaining = std::max(0.0, g.remaining - job(j).speedup(g.size) * (now_ - from));
    g.updated_at = now_;
  }

  void schedule_finish(int j) {
    auto& g = gang(j);
    ++g.epoch;
    push({std::max(now_, g.progress_from) + g.remaining / job(j).speedup(g.size), 0, EventType::finish, j, g.epoch});
  }

  // Its work is done: every member ACKs through the broker, and its workers are free.
  void complete(int j) {
    auto& g = gang(j);
    for (const int ni : g.members) {
      auto& n = nodes_[static_cast<std::size_t>(ni)];
      queue_->ack(j, n.id);
      n.state = Node::State::idle;
      n.job = -1;
    }
    g.done = true;
    running_.erase(j);
    finish_s_[static_cast<std::size_t>(j)] = now_;
    in_system_.leave(now_);
  }

  ElasticResult finish() {
    auto& r = result_;
    r.mode = gang_mode_name(options_.mode);
    r.jobs = static_cast<int>(trace_.size());
    r.arrival_span_s = last_arrival_;
    const double capacity = static_cast<double>(spec_.caps.gpu.count) * static_cast<double>(nodes_.size()) * last_arrival_;
    if (capacity > 0) {
      r.utilization = busy_gpu_s_ / capacity;
      r.useful_utilization = useful_gpu_s_ / capacity;
      r.held_idle = held_gpu_s_ / capacity;
      r.waiting_idle = waiting_idle_gpu_s_ / capacity;
    }
    completion_figures(trace_, finish_s_, static_cast<int>(nodes_.size()), in_system_, r);
    return r;
  }
};

}  // namespace

ElasticResult simulate_gangs(const std::vector<ElasticJob>& trace, const WorkerSpec& node, int nodes, const ElasticSimOptions& options) {
  return GangSimulation(trace, node, nodes, options).run();
}

}  // namespace ojs::bench
