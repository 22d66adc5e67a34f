#include "ojs/ml/predicates.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>

#include "json_fields.hpp"
#include "ojs/ml/affinity.hpp"
#include "ojs/ml/requirement_class.hpp"

namespace ojs::ml {
namespace {

using Result = std::optional<Refusal>;

Refusal refuse(std::string_view name, std::string reason, std::string summary, Facts facts = {}) {
  return Refusal{std::string(name), std::move(reason), std::move(summary), std::move(facts), VerdictCode::unresolvable};
}

// A dynamic predicate's refusal: busy now.
Refusal busy(std::string_view name, std::string reason, std::string summary, Facts facts = {}) {
  Refusal r = refuse(name, std::move(reason), std::move(summary), std::move(facts));
  r.code = VerdictCode::wait;
  return r;
}

// Shared shape of every "worker must have at least N of something" predicate.
// what: "GB per GPU"; unit: "GB" -> "has 40 GB per GPU, job needs >= 80 GB".
Result at_least(std::string_view name, std::optional<double> have, std::optional<double> need, std::string_view what,
                std::string_view unit) {
  if (!need || (have && *have >= *need)) return std::nullopt;
  const std::string n = format_number(*need);
  std::string tail = ", job needs >= " + n + " " + std::string(unit);
  if (!have)
    return refuse(name, "does not advertise " + std::string(what) + tail, "have < " + n + " " + std::string(what),
                  {{"need", *need}});
  return refuse(name, "has " + format_number(*have) + " " + std::string(what) + tail,
                "have < " + n + " " + std::string(what), {{"have", *have}, {"need", *need}});
}

bool needs_gpu(const MatchContext& c) { return c.req.hard.gpu.count > 0; }

// ---- static predicates ----

Result accelerator(const MatchContext& c) {
  auto need = c.req.hard.accelerator;
  if (!need || *need == Accelerator::cpu || c.caps.accelerator == *need) return std::nullopt;
  const std::string n(to_string(*need)), h(to_string(c.caps.accelerator));
  return refuse("accelerator", "is a " + h + " worker, job needs " + n, "are not " + n + " workers",
                {{"have", h}, {"need", n}});
}

Result gpu_type(const MatchContext& c) {
  const auto& need = c.req.hard.gpu.type;
  if (!needs_gpu(c) || need.empty() || (c.caps.gpu.count > 0 && gpu_type_matches(need, c.caps.gpu.type)))
    return std::nullopt;
  const std::string have = c.caps.gpu.count == 0 ? "no GPU" : c.caps.gpu.type.empty() ? "an unnamed GPU type" : c.caps.gpu.type;
  return refuse("gpu_type", "has " + have + ", job needs " + need, "lack GPU type " + need, {{"have", have}, {"need", need}});
}

Result gpu_count(const MatchContext& c) {
  if (!needs_gpu(c)) return std::nullopt;
  return at_least("gpu_count", c.caps.gpu.count, c.req.hard.gpu.count, "GPUs", "GPUs");
}

Result gpu_memory(const MatchContext& c) {
  if (!needs_gpu(c)) return std::nullopt;
  std::optional<double> have;
  if (c.caps.gpu.count > 0) have = c.caps.gpu.memory_gb;
  return at_least("gpu_memory", have, c.req.hard.gpu.memory_gb, "GB per GPU", "GB");
}

Result gpu_compute_capability(const MatchContext& c) {
  const auto& need = c.req.hard.gpu.min_compute_capability;
  const auto& have = c.caps.gpu.compute_capability;
  if (!needs_gpu(c) || !need || (c.caps.gpu.count > 0 && have && *have >= *need)) return std::nullopt;
  const std::string n = need->str();
  if (!have || c.caps.gpu.count == 0)
    return refuse("gpu_compute_capability", "does not advertise a GPU compute capability, job needs >= " + n,
                  "have compute capability < " + n, {{"need", n}});
  return refuse("gpu_compute_capability", "has compute capability " + have->str() + ", job needs >= " + n,
                "have compute capability < " + n, {{"have", have->str()}, {"need", n}});
}

Result gpu_interconnect(const MatchContext& c) {
  // pcie is satisfied by any multi-GPU host (NVLink hosts have PCIe too); only nvlink constrains.
  if (c.req.hard.gpu.interconnect != Interconnect::nvlink || c.caps.gpu.interconnect == "nvlink") return std::nullopt;
  const std::string have = c.caps.gpu.interconnect.empty() ? "unknown" : c.caps.gpu.interconnect;
  return refuse("gpu_interconnect", "has " + have + " GPU interconnect, job needs nvlink", "lack NVLink",
                {{"have", have}, {"need", "nvlink"}});
}

// "4x4" fits in "4x8": same rank, every dimension no larger.
bool topology_fits(const std::string& need, const std::string& have) {
  auto dims = [](const std::string& t) {
    std::vector<long> out;
    std::size_t pos = 0;
    while (pos <= t.size()) {
      auto x = t.find('x', pos);
      out.push_back(std::strtol(t.substr(pos, x - pos).c_str(), nullptr, 10));
      if (x == std::string::npos) break;
      pos = x + 1;
    }
    return out;
  };
  auto n = dims(need), h = dims(have);
  if (n.size() != h.size()) return false;
  for (std::size_t i = 0; i < n.size(); ++i)
    if (n[i] > h[i]) return false;
  return true;
}

Result tpu(const MatchContext& c) {
  const auto& need = c.req.hard.tpu;
  const auto& have = c.caps.tpu;
  std::vector<std::string> why;
  std::string summary;
  if (!need.type.empty() && need.type != have.type) {
    why.push_back("has TPU type " + (have.type.empty() ? std::string("none") : have.type) + ", job needs " + need.type);
    summary = "lack TPU " + need.type;
  }
  if (need.chip_count > have.chip_count) {
    why.push_back("has " + std::to_string(have.chip_count) + " TPU chips, job needs >= " + std::to_string(need.chip_count));
    if (summary.empty()) summary = "have < " + std::to_string(need.chip_count) + " TPU chips";
  }
  if (!need.topology.empty() && !topology_fits(need.topology, have.topology)) {
    why.push_back("has TPU slice " + (have.topology.empty() ? std::string("none") : have.topology) + ", job needs " +
                  need.topology);
    if (summary.empty()) summary = "lack TPU slice " + need.topology;
  }
  if (why.empty()) return std::nullopt;
  return refuse("tpu", join_texts(why, "; "), summary,
                {{"have_chips", double(have.chip_count)}, {"need_chips", double(need.chip_count)}});
}

Result host_memory(const MatchContext& c) {
  return at_least("host_memory", c.caps.memory_gb, c.req.hard.memory_gb, "GB host memory", "GB");
}
Result cpu_cores(const MatchContext& c) {
  auto to_d = [](std::optional<int> v) { return v ? std::optional<double>(*v) : std::nullopt; };
  return at_least("cpu_cores", to_d(c.caps.cpu_cores), to_d(c.req.hard.cpu_cores), "CPU cores", "cores");
}
Result storage(const MatchContext& c) {
  return at_least("storage", c.caps.storage_gb, c.req.hard.storage_gb, "GB scratch storage", "GB");
}
Result shm(const MatchContext& c) {
  return at_least("shm", c.caps.shm_size_gb, c.req.hard.shm_size_gb, "GB /dev/shm", "GB");
}

Result node_selector(const MatchContext& c) {
  std::vector<std::string> why;
  std::string summary;
  Facts facts;
  for (const auto& [key, value] : c.req.hard.node_selector) {
    auto it = c.caps.labels.find(key);
    if (it != c.caps.labels.end() && it->second == value) continue;
    why.push_back(it == c.caps.labels.end() ? "lacks label " + key + "=" + value
                                            : "has label " + key + "=" + it->second + ", job needs " + key + "=" + value);
    if (summary.empty()) {
      summary = "lack label " + key + "=" + value;
      facts = {{"key", key}, {"need", value}};
      if (it != c.caps.labels.end()) facts.emplace_back("have", it->second);
    }
  }
  if (why.empty()) return std::nullopt;
  return refuse("node_selector", join_texts(why, "; "), summary, std::move(facts));
}

// Shared by required_affinity: all rules must hold on the worker's labels.
Result required_affinity(const MatchContext& c) {
  std::vector<std::string> why;
  std::string summary;
  for (const auto& rule : c.req.hard.required_affinity) {
    auto mismatch = rule_mismatch(rule, c.caps.labels);
    if (!mismatch) continue;
    why.push_back(*mismatch);
    if (summary.empty()) summary = "fail affinity " + describe(rule);
  }
  if (why.empty()) return std::nullopt;
  return refuse("required_affinity", join_texts(why, "; "), summary, {{"failed_rules", double(why.size())}});
}

std::string model_ref(std::string_view id, std::string_view version) {
  std::string ref(id);
  if (!version.empty()) ref.append("@").append(version);
  return ref;
}

Result model_pin(const MatchContext& c) {
  const auto& h = c.req.hard;
  if (h.pinned_model_id.empty() || c.caps.has_model(h.pinned_model_id, h.pinned_model_version)) return std::nullopt;
  std::vector<std::string> loaded;
  for (const auto& m : c.caps.models_loaded) loaded.push_back(model_ref(m.model_id, m.model_version));
  const std::string want = model_ref(h.pinned_model_id, h.pinned_model_version);
  return refuse("model_pin", "lacks model " + want + " (loaded: " + (loaded.empty() ? "none" : join_texts(loaded)) + ")",
                "lack model " + want, {{"need", want}});
}

Result runtime(const MatchContext& c) {
  const auto& need = c.req.hard.runtime;
  const auto& have = c.caps.runtimes;
  if (need.empty() || std::binary_search(have.begin(), have.end(), need)) return std::nullopt;
  return refuse("runtime", "lacks runtime " + need + " (has " + (have.empty() ? "none" : join_texts(have)) + ")",
                "lack runtime " + need, {{"need", need}});
}

Result model_format(const MatchContext& c) {
  const auto& need = c.req.hard.model_format;
  if (need.empty()) return std::nullopt;
  const auto& formats = c.caps.model_formats;
  if (std::binary_search(formats.begin(), formats.end(), need)) return std::nullopt;
  for (const auto& m : c.caps.models_loaded)
    if (m.model_format == need) return std::nullopt;
  return refuse("model_format", "cannot load model format " + need + " (formats: " + (formats.empty() ? "none" : join_texts(formats)) + ")",
                "lack model format " + need, {{"need", need}});
}

// ---- dynamic predicates ----

// Both ways: the class's own rules against what runs, and what runs against the
// class (a running job's anti-affinity refuses the jobs it names). The class knows
// its jobs' ML attributes only: rules on their type, id or meta.labels are judged
// on the claimed job (JobService, the same excluded_by_running).
Result anti_affinity(const MatchContext& c) {
  if (!c.load) return std::nullopt;
  for (const auto& rule : c.req.hard.anti_affinity)
    for (const auto& job : c.load->active)
      if (rule_matches(rule, job.labels))
        return busy("anti_affinity", "runs job " + job.job_id + " matching anti-affinity " + describe(rule),
                      "run a job matching anti-affinity " + describe(rule), {{"job_id", job.job_id}});
  const bool any_rules = std::any_of(c.load->active.begin(), c.load->active.end(), [](const ActiveJob& j) { return !j.anti_affinity.empty(); });
  if (!any_rules) return std::nullopt;  // the common case: no class labels to build
  if (auto ex = excluded_by_running(*c.load, job_labels(class_json(c.req)), true))
    return busy("anti_affinity", "runs job " + ex->job_id + " whose anti-affinity " + describe(ex->rule) + " excludes this job",
                  "run a job whose anti-affinity " + describe(ex->rule) + " excludes it", {{"job_id", ex->job_id}});
  return std::nullopt;
}

// Whether the worker's devices could hold the job were nothing running and every
// device healthy and in service: a MIG slice takes only single-GPU jobs, so a 2-GPU
// job on a MIG-sliced worker can never run there, however long it waits.
bool fits_idle_devices(const std::vector<GpuDevice>& devices, const GpuRequirement& need, const AssignmentOptions& assignment) {
  if (std::all_of(devices.begin(), devices.end(), [](const GpuDevice& d) { return d.healthy; }))
    return assign_devices(devices, {}, need, assignment).ok();  // the common case: no copy
  std::vector<GpuDevice> idle = devices;
  for (auto& d : idle) d.healthy = true;
  return assign_devices(idle, {}, need, assignment).ok();
}

Result free_gpus(const MatchContext& c) {
  const int need = c.req.hard.gpu.count;
  if (need <= 0 || !c.load) return std::nullopt;
  const std::string summary = "have < " + std::to_string(need) + " free GPUs";
  if (!c.caps.devices.empty()) {
    auto a = assign_devices(c.caps.devices, unavailable_devices(c.caps.devices, *c.load, c.req.hard.gpu), c.req.hard.gpu, c.assignment);
    if (a.ok()) {
      if (c.devices_out) *c.devices_out = std::move(a.indices);
      return std::nullopt;
    }
    if (!fits_idle_devices(c.caps.devices, c.req.hard.gpu, c.assignment))
      return refuse("free_gpus", a.refusal + "; no set of its devices could ever hold the job (a MIG slice takes only single-GPU jobs)",
                    "have no " + std::to_string(need) + " devices that could ever hold the job",
                    {{"free", double(a.free_matching)}, {"need", double(need)}});
    // A shared device with a free slot refuses for memory: say so, it is not "busy" in slots.
    const auto memory = shared_memory_shortfall(c.caps.devices, *c.load, c.req.hard.gpu);
    return busy("free_gpus", memory.empty() ? a.refusal : a.refusal + "; " + memory, summary,
                {{"free", double(a.free_matching)}, {"need", double(need)}});
  }
  const int free = std::max(0, c.caps.gpu.count - c.load->gpus_in_use());
  if (free >= need) return std::nullopt;
  return busy("free_gpus", "insufficient free GPUs: " + std::to_string(free) + " free, job needs " + std::to_string(need),
              summary, {{"free", double(free)}, {"need", double(need)}});
}

// Shared shape of the host resources running jobs hold (CPU cores, host memory, TPU
// chips): the worker's advertised capacity less what its running jobs declared must
// cover what the job declares. A worker that advertises no capacity, or a job that
// declares none, is not judged here, nor a job larger than the whole worker (the
// static predicate refuses it: it never fits, rather than waits). `capacity` 0: none
// advertised (a plain double: GCC 12 warns falsely on an optional one inlined here).
Result free_capacity(const MatchContext& c, std::string_view name, double capacity, double held, double need,
                     std::string_view what) {
  if (!c.load || need <= 0 || capacity <= 0 || need > capacity) return std::nullopt;
  const double free = std::max(0.0, capacity - held);
  if (free >= need) return std::nullopt;
  const std::string w(what);
  return busy(name,
              "has " + format_number(free) + " of " + format_number(capacity) + " " + w + " free (" + format_number(held) +
                  " held by running jobs), job needs " + format_number(need),
              "have < " + format_number(need) + " free " + w,
              {{"free", free}, {"need", need}, {"capacity", capacity}, {"held", held}});
}

Result free_cpu_cores(const MatchContext& c) {
  return free_capacity(c, "free_cpu_cores", c.caps.cpu_cores.value_or(0), c.load ? c.load->cpu_cores_in_use() : 0,
                       c.req.hard.cpu_cores.value_or(0), "CPU cores");
}

Result free_host_memory(const MatchContext& c) {
  return free_capacity(c, "free_host_memory", c.caps.memory_gb.value_or(0), c.load ? c.load->memory_gb_in_use() : 0,
                       c.req.hard.memory_gb.value_or(0), "GB host memory");
}

Result free_tpu_chips(const MatchContext& c) {
  return free_capacity(c, "free_tpu_chips", c.caps.tpu.chip_count, c.load ? c.load->tpu_chips_in_use() : 0, c.req.hard.tpu.chip_count,
                       "TPU chips");
}

constexpr std::array<Predicate, 21> kPredicates{{
    {"accelerator", Phase::static_, accelerator},
    {"gpu_type", Phase::static_, gpu_type},
    {"gpu_count", Phase::static_, gpu_count},
    {"gpu_memory", Phase::static_, gpu_memory},
    {"gpu_compute_capability", Phase::static_, gpu_compute_capability},
    {"gpu_interconnect", Phase::static_, gpu_interconnect},
    {"tpu", Phase::static_, tpu},
    {"host_memory", Phase::static_, host_memory},
    {"cpu_cores", Phase::static_, cpu_cores},
    {"storage", Phase::static_, storage},
    {"shm", Phase::static_, shm},
    {"node_selector", Phase::static_, node_selector},
    {"required_affinity", Phase::static_, required_affinity},
    {"model_pin", Phase::static_, model_pin},
    {"runtime", Phase::static_, runtime},
    {"model_format", Phase::static_, model_format},
    {"anti_affinity", Phase::dynamic, anti_affinity},
    {"free_gpus", Phase::dynamic, free_gpus},
    {"free_cpu_cores", Phase::dynamic, free_cpu_cores},
    {"free_host_memory", Phase::dynamic, free_host_memory},
    {"free_tpu_chips", Phase::dynamic, free_tpu_chips},
}};

Refusal no_capabilities() {
  return refuse("capabilities", "sent no capabilities, job has hard ML constraints", "sent no capabilities");
}

// Runs the predicates of one phase; stop_at_first is the fast path.
bool run_phase(Phase phase, const MatchContext& ctx, Judgement* out, bool stop_at_first) {
  bool ok = true;
  for (const auto& p : kPredicates) {
    if (p.phase != phase) continue;
    if (auto r = p.check(ctx)) {
      ok = false;
      if (out) out->refusals.push_back(std::move(*r));
      if (stop_at_first) return false;
    }
  }
  return ok;
}

const AssignmentOptions kDefaultAssignment{};

}  // namespace

std::span<const Predicate> predicates() { return kPredicates; }

Judgement judge_static(const Requirements& req, const Capabilities* caps) {
  Judgement j;
  if (!caps) {
    if (req.has_hard_constraints()) j.refusals.push_back(no_capabilities());
    return j;
  }
  run_phase(Phase::static_, {req, *caps, nullptr, kDefaultAssignment, nullptr}, &j, false);
  return j;
}

Judgement judge_dynamic(const Requirements& req, const Capabilities* caps, const WorkerLoad& load,
                        const AssignmentOptions& assignment) {
  Judgement j;
  if (!caps) return j;  // without capabilities only unconstrained jobs pass, and they need nothing
  run_phase(Phase::dynamic, {req, *caps, &load, assignment, &j.devices}, &j, false);
  if (!j.eligible()) j.devices.clear();
  return j;
}

Judgement judge(const Requirements& req, const Capabilities* caps, const WorkerLoad& load,
                const AssignmentOptions& assignment) {
  Judgement j = judge_static(req, caps);
  Judgement d = judge_dynamic(req, caps, load, assignment);
  j.refusals.insert(j.refusals.end(), std::make_move_iterator(d.refusals.begin()), std::make_move_iterator(d.refusals.end()));
  if (j.eligible()) j.devices = std::move(d.devices);
  return j;
}

bool fits_static(const Requirements& req, const Capabilities* caps) {
  if (!caps) return !req.has_hard_constraints();
  return run_phase(Phase::static_, {req, *caps, nullptr, kDefaultAssignment, nullptr}, nullptr, true);
}

bool fits(const Requirements& req, const Capabilities* caps, const WorkerLoad& load, const AssignmentOptions& assignment) {
  if (!fits_static(req, caps)) return false;
  if (!caps) return true;
  return run_phase(Phase::dynamic, {req, *caps, &load, assignment, nullptr}, nullptr, true);
}

nlohmann::json to_json(const Refusal& r) {
  nlohmann::json facts = nlohmann::json::object();
  for (const auto& [k, v] : r.facts) {
    if (const double* d = std::get_if<double>(&v)) facts[k] = canonical_number(*d);
    else facts[k] = std::get<std::string>(v);
  }
  return {{"predicate", r.predicate}, {"code", to_string(r.code)}, {"reason", r.reason}, {"summary", r.summary}, {"facts", facts}};
}

Refusal refusal_from_json(const nlohmann::json& j) {
  Refusal r;
  r.predicate = j.value("predicate", "");
  r.reason = j.value("reason", "");
  r.summary = j.value("summary", "");
  if (j.contains("facts") && j["facts"].is_object())
    for (auto it = j["facts"].begin(); it != j["facts"].end(); ++it) {
      if (it.value().is_number()) r.facts.emplace_back(it.key(), it.value().get<double>());
      else if (it.value().is_string()) r.facts.emplace_back(it.key(), it.value().get<std::string>());
    }
  const auto code = parse_verdict_code(j.value("code", ""));
  const bool is_static = std::any_of(kPredicates.begin(), kPredicates.end(),
                                     [&](const Predicate& p) { return p.phase == Phase::static_ && p.name == r.predicate; });
  r.code = code ? *code : is_static || r.predicate == "capabilities" ? VerdictCode::unresolvable : VerdictCode::wait;
  return r;
}

VerdictCode Judgement::code() const {
  VerdictCode c = VerdictCode::ok;
  for (const auto& r : refusals) c = worker_code(c, r.code);
  return c;
}

nlohmann::json to_json(const Judgement& j) {
  nlohmann::json refusals = nlohmann::json::array();
  for (const auto& r : j.refusals) refusals.push_back(to_json(r));
  nlohmann::json out = {{"eligible", j.eligible()}, {"code", to_string(j.code())}, {"refusals", refusals}, {"devices", j.devices}};
  if (!j.holds.empty()) {
    nlohmann::json holds = nlohmann::json::array();
    for (const auto& r : j.holds) holds.push_back(to_json(r));
    out["holds"] = std::move(holds);
  }
  return out;
}

}  // namespace ojs::ml
