#include "ojs/ml/requirements.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <map>
#include <regex>

#include "ojs/core/error.hpp"
#include "json_fields.hpp"
#include "ojs/ml/meta_aliases.hpp"
#include "ojs/ml/storage_uri.hpp"

namespace ojs::ml {
namespace {

using nlohmann::json;

// Every accepted attribute, by its name without "ext_ml_", pointing at the value
// and remembering how the producer spelled it so errors name the right field.
using FieldMap = std::map<std::string, Field, std::less<>>;

constexpr std::string_view kGpuFields[] = {"gpu_count", "gpu_type", "gpu_memory_gb", "gpu_compute_capability",
                                           "gpu_interconnect"};
constexpr std::string_view kTpuFields[] = {"tpu_type", "tpu_topology", "tpu_chip_count"};

// "meta" and the first `depth` parts of an alias's path: where a value was found, or
// what was not an object (built only then: a PUSH walks every alias).
std::string alias_path(const MetaAlias& alias, std::size_t depth) {
  std::string path = "meta";
  for (std::size_t i = 0; i < depth; ++i) path.append(".").append(alias.path[i]);
  return path;
}

void collect_meta(const json& job, FieldMap& fields) {
  auto meta = job.find("meta");
  if (meta == job.end() || !meta->is_object()) return;
  for (const auto& alias : meta_aliases()) {  // the one table (meta_aliases.hpp)
    const json* node = &*meta;
    std::size_t depth = 0;
    for (std::string_view part : alias.path) {
      if (part.empty()) break;
      if (!node->is_object()) {
        const std::string path = alias_path(alias, depth);
        if (node->is_number() && path == "meta.resources.gpu") {  // count shorthand, read below
          node = nullptr;
          break;
        }
        throw invalid_field(path, "must be an object");
      }
      auto it = node->find(part);
      ++depth;
      node = it == node->end() ? nullptr : &*it;
      if (!node) break;
    }
    if (node) fields[std::string(alias.attribute)] = {node, alias_path(alias, depth)};
  }
  // SDK shorthand: meta.resources.gpu as a bare count.
  if (auto r = meta->find("resources"); r != meta->end() && r->is_object())
    if (auto g = r->find("gpu"); g != r->end() && g->is_number())
      fields["gpu_count"] = {&*g, "meta.resources.gpu"};
}

void collect_top_level(const json& job, FieldMap& fields) {
  if (!job.is_object()) return;
  for (auto it = job.begin(); it != job.end(); ++it) {
    const std::string& key = it.key();
    if (key.rfind("ext_ml_", 0) != 0) continue;
    std::string name = key.substr(7);
    if (name == "node_affinity") {
      if (job.contains("ext_ml_affinity")) continue;  // the spec's name wins
      name = "affinity";
    }
    fields[name] = {&it.value(), key};
  }
}

bool any_of_fields(const FieldMap& f, std::span<const std::string_view> names) {
  for (auto n : names)
    if (f.count(n)) return true;
  return false;
}

// --- affinity ---

AffinityRule parse_rule(const json& v, const std::string& path, bool weighted) {
  if (!v.is_object()) throw invalid_field(path, "must be an object {key, operator, values}");
  AffinityRule rule;
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it.key() != "key" && it.key() != "operator" && it.key() != "values" && !(weighted && it.key() == "weight"))
      throw invalid_field(path + "." + it.key(), "unknown property");
  auto key = v.find("key");
  if (key == v.end() || !key->is_string() || key->get_ref<const std::string&>().empty())
    throw invalid_field(path + ".key", "must be a non-empty string");
  rule.key = key->get<std::string>();
  auto op = v.find("operator");
  auto parsed_op = op != v.end() && op->is_string() ? parse_affinity_op(op->get_ref<const std::string&>()) : std::nullopt;
  if (!parsed_op) throw invalid_field(path + ".operator", "must be one of In, NotIn, Exists, DoesNotExist, Gt, Gte, Lt, Lte");
  rule.op = *parsed_op;
  const std::string vpath = path + ".values";
  if (auto values = v.find("values"); values != v.end()) rule.values = read_string_list({&*values, vpath});
  const std::string opname(to_string(rule.op));
  switch (rule.op) {
    case AffinityOp::In:
    case AffinityOp::NotIn:
      if (rule.values.empty()) throw invalid_field(vpath, "must be a non-empty array for operator " + opname);
      break;
    case AffinityOp::Exists:
    case AffinityOp::DoesNotExist:
      if (!rule.values.empty()) throw invalid_field(vpath, "must be absent for operator " + opname);
      break;
    default: {
      double n = 0;
      if (rule.values.size() != 1 || !parse_double(rule.values[0], n))
        throw invalid_field(vpath, "operator " + opname + " needs exactly one numeric value");
    }
  }
  if (weighted)
    if (auto w = v.find("weight"); w != v.end()) rule.weight = read_int({&*w, path + ".weight"}, 0, 100);
  return rule;
}

std::vector<AffinityRule> parse_rules(const json& obj, const std::string& path, std::string_view member,
                                      bool weighted) {
  std::vector<AffinityRule> out;
  auto list = obj.find(std::string(member));
  if (list == obj.end()) return out;
  const std::string lpath = path + "." + std::string(member);
  if (!list->is_array()) throw invalid_field(lpath, "must be an array of rules");
  for (std::size_t i = 0; i < list->size(); ++i)
    out.push_back(parse_rule((*list)[i], lpath + "[" + std::to_string(i) + "]", weighted));
  return out;
}

void check_members(const json& obj, const std::string& path, std::initializer_list<std::string_view> allowed) {
  if (!obj.is_object()) throw invalid_field(path, "must be an object");
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end())
      throw invalid_field(path + "." + it.key(), "unknown property");
}

// --- small format checks ---

const std::regex& checksum_re() {
  static const std::regex re("^[a-z0-9]+:[a-f0-9]+$");
  return re;
}

// "2x4" -> 8, "4x4x4" -> 64; nullopt unless NxM or NxMxK with positive integers.
std::optional<int> topology_chips(const std::string& t) {
  static const std::regex re("^(\\d+)x(\\d+)(?:x(\\d+))?$");
  std::smatch m;
  if (!std::regex_match(t, m, re)) return std::nullopt;
  long long product = 1;
  for (std::size_t i = 1; i < m.size(); ++i) {
    if (!m[i].matched) continue;
    long long d = std::stoll(m[i].str().substr(0, 9));
    if (d < 1) return std::nullopt;
    product *= d;
    if (product > 1'000'000) return std::nullopt;
  }
  return static_cast<int>(product);
}

void check_storage_uri(const Field& f, const std::string& uri) {
  if (!normalise_storage_uri(uri))
    throw invalid_field(f.path, "must be a URI s3://bucket/path/ (or gs://, az://, file:///path/) without '..' segments");
  if (uri.back() != '/') throw invalid_field(f.path, "must end with a trailing slash");
}

// --- the parse, group by group ---

class Parser {
 public:
  explicit Parser(const FieldMap& f) : f_(f) {}

  const Field* get(std::string_view name) const {
    auto it = f_.find(name);
    return it == f_.end() ? nullptr : &it->second;
  }
  const Field* first_of(std::span<const std::string_view> names) const {
    for (auto n : names)
      if (auto* f = get(n)) return f;
    return nullptr;
  }
  std::string str(std::string_view name, std::size_t max_len = 1024) const {
    auto* f = get(name);
    return f ? read_string(*f, max_len) : std::string();
  }
  std::string enumerated(std::string_view name, std::initializer_list<std::string_view> allowed) const {
    auto* f = get(name);
    return f ? read_enum(*f, allowed) : std::string();
  }
  std::optional<int> integer(std::string_view name, long long lo, long long hi) const {
    auto* f = get(name);
    return f ? std::optional<int>(read_int(*f, lo, hi)) : std::nullopt;
  }
  std::optional<double> number(std::string_view name, double lo, double hi) const {
    auto* f = get(name);
    return f ? std::optional<double>(read_number(*f, lo, hi)) : std::nullopt;
  }
  std::optional<bool> boolean(std::string_view name) const {
    auto* f = get(name);
    return f ? std::optional<bool>(read_bool(*f)) : std::nullopt;
  }
  std::optional<PriorityClass> priority(std::string_view name) const {
    auto s = enumerated(name, {"spot", "on-demand", "reserved"});
    return s.empty() ? std::nullopt : parse_priority_class(s);
  }

  void resources(Requirements& r) const {
    HardConstraints& h = r.hard;
    const bool gpu_fields = any_of_fields(f_, kGpuFields);
    const bool tpu_fields = any_of_fields(f_, kTpuFields);
    if (auto a = enumerated("accelerator", {"gpu", "tpu", "fpga", "cpu"}); !a.empty()) h.accelerator = parse_accelerator(a);
    if (gpu_fields && tpu_fields) throw invalid_field(first_of(kTpuFields)->path, "tpu fields cannot be combined with gpu fields");
    if (gpu_fields) {
      if (h.accelerator && *h.accelerator != Accelerator::gpu)
        throw invalid_field(get("accelerator")->path, "must be gpu when gpu fields are set");
      h.accelerator = Accelerator::gpu;
    }
    if (tpu_fields) {
      if (h.accelerator && *h.accelerator != Accelerator::tpu)
        throw invalid_field(get("accelerator")->path, "must be tpu when tpu fields are set");
      h.accelerator = Accelerator::tpu;
    }
    gpu(r);
    tpu(h);
    h.memory_gb = number("memory_gb", 0.5, 8192);
    h.cpu_cores = integer("cpu_cores", 1, 1024);
    h.storage_gb = number("storage_gb", 0, 100000);
    h.shm_size_gb = number("shm_size_gb", 0, 1024);
  }

  void gpu(Requirements& r) const {
    GpuRequirement& g = r.hard.gpu;
    if (r.hard.accelerator != Accelerator::gpu) return;
    g.count = 1;  // default when any gpu field (or accelerator gpu) is set
    if (auto* f = get("gpu_count")) {
      const bool others = first_of(std::span(kGpuFields).subspan(1)) != nullptr;
      if (others && f->value->is_number() && f->value->get<double>() < 1)
        throw invalid_field(f->path, "must be >= 1 when other gpu fields are set");
      g.count = read_int(*f, 1, 128);
    }
    g.type = lowercase(str("gpu_type", 128));
    if (auto* f = get("gpu_type"); f && g.type.empty()) throw invalid_field(f->path, "must be a non-empty string");
    g.memory_gb = number("gpu_memory_gb", 1, 640);
    if (auto* f = get("gpu_compute_capability")) {
      g.min_compute_capability = parse_compute_capability(read_string(*f, 16));
      if (!g.min_compute_capability) throw invalid_field(f->path, "must be \"major.minor\" (e.g. \"8.0\")");
    }
    if (auto s = enumerated("gpu_interconnect", {"nvlink", "pcie", "any"}); !s.empty()) g.interconnect = *parse_interconnect(s);
    if (g.count == 1) g.interconnect = Interconnect::any;  // nothing to interconnect
  }

  void tpu(HardConstraints& h) const {
    TpuRequirement& t = h.tpu;
    t.type = enumerated("tpu_type", {"v4", "v5e", "v5p", "v6e"});
    std::optional<int> chips_from_topology;
    if (auto* f = get("tpu_topology")) {
      t.topology = read_string(*f, 32);
      chips_from_topology = topology_chips(t.topology);
      if (!chips_from_topology) throw invalid_field(f->path, "must be a slice shape NxM or NxMxK (e.g. \"2x4\")");
    }
    if (auto n = integer("tpu_chip_count", 1, 1024)) {
      if (chips_from_topology && *chips_from_topology != *n)
        throw invalid_field(get("tpu_chip_count")->path,
                            "must equal the chips of tpu_topology " + t.topology + " (" + std::to_string(*chips_from_topology) + ")");
      t.chip_count = *n;
    } else if (chips_from_topology) {
      t.chip_count = *chips_from_topology;
    }
    if (h.accelerator == Accelerator::tpu && t.chip_count == 0) t.chip_count = 1;
  }

  void model(Requirements& r) const {
    ModelInfo& m = r.model;
    m.id = str("model_id", 256);
    if (auto* f = get("model_id"); f && m.id.empty()) throw invalid_field(f->path, "must be a string of 1 to 256 characters");
    m.version = str("model_version", 128);
    m.provider = enumerated("model_provider", {"openai", "anthropic", "google", "huggingface", "replicate", "local", "custom"});
    m.checksum = str("model_checksum", 1024);
    if (auto* f = get("model_checksum"); f && !std::regex_match(m.checksum, checksum_re()))
      throw invalid_field(f->path, "must be algorithm:hexdigest (e.g. sha256:e3b0...)");
    m.format = enumerated("model_format", {"safetensors", "gguf", "onnx", "torchscript", "savedmodel", "custom"});
    m.registry = str("model_registry");
    m.registry_uri = str("model_registry_uri", 2048);
    if (!m.id.empty() && !m.version.empty()) {
      r.hard.pinned_model_id = m.id;
      r.hard.pinned_model_version = m.version;
    } else if (!m.id.empty()) {
      r.soft.locality_model_id = m.id;
    }
    r.hard.model_format = m.format;
  }

  void compute(Requirements& r) const {
    ComputeInfo& c = r.compute;
    c.max_tokens = integer("max_tokens", 1, 10'000'000);
    c.max_batch_size = integer("max_batch_size", 1, 100'000);
    r.scheduling.timeout_seconds = integer("timeout_seconds", 1, 604'800);
    // proposed ext_ml_estimated_duration_seconds: the producer's estimate,
    // ordering for the `sjf` queue policy and backfill (docs/matching.md).
    r.scheduling.estimated_duration_seconds = integer("estimated_duration_seconds", 1, 31'536'000);
    r.hard.runtime = enumerated("runtime", {"pytorch", "tensorflow", "onnx", "triton", "vllm", "tgi", "custom"});
    c.precision = enumerated("precision", {"fp32", "fp16", "bf16", "fp8", "int8", "int4"});
    c.distributed_strategy = enumerated("distributed_strategy",
                                        {"none", "data_parallel", "tensor_parallel", "pipeline_parallel", "fsdp", "deepspeed"});
    // Precision raises the GPU's minimum compute capability; it says nothing about
    // CPU or TPU jobs.
    auto& cc = r.hard.gpu.min_compute_capability;
    if (r.hard.gpu.count > 0)
      if (auto implied = implied_compute_capability(c.precision); implied && (!cc || *cc < *implied)) cc = implied;
  }

  void placement(Requirements& r) const {
    if (auto* f = get("node_selector")) r.hard.node_selector = read_string_map(*f);
    if (auto* f = get("affinity")) {
      check_members(*f->value, f->path, {"required", "preferred"});
      r.hard.required_affinity = parse_rules(*f->value, f->path, "required", false);
      r.soft.preferred_affinity = parse_rules(*f->value, f->path, "preferred", true);
    }
    if (auto* f = get("anti_affinity")) {
      check_members(*f->value, f->path, {"required"});
      r.hard.anti_affinity = parse_rules(*f->value, f->path, "required", false);
    }
  }

  void preemption(Requirements& r) const {
    Scheduling& s = r.scheduling;
    s.priority_class = priority("priority_class");
    // Only spot capacity is preemptible unless the producer says otherwise.
    s.preemptible = boolean("preemptible").value_or(s.priority_class == PriorityClass::spot);
    s.grace_period_s = integer("preemption_grace_period_s", 0, 3600).value_or(30);
    s.min_runtime_before_preempt_s = integer("min_runtime_before_preempt_s", 0, 604'800);
    s.reservation_id = str("reservation_id", 256);
    s.reservation_timeout_s = integer("reservation_timeout_s", 0, 86400);
    s.priority_escalation = boolean("priority_escalation").value_or(false);
    s.escalation_after_s = integer("escalation_after_s", 0, 604'800);
    s.escalation_target_class = priority("escalation_target_class");
    if (s.escalation_target_class && s.priority_class && *s.escalation_target_class <= *s.priority_class)
      throw invalid_field(get("escalation_target_class")->path, "must be a higher class than priority_class");
  }

  void checkpoints(Requirements& r) const {
    CheckpointConfig& c = r.scheduling.checkpoint;
    c.enabled = boolean("checkpoint_enabled").value_or(false);
    c.interval_s = integer("checkpoint_interval_s", 10, 86400).value_or(300);
    c.max_count = integer("checkpoint_max_count", 1, 100).value_or(3);
    c.on_preempt = boolean("checkpoint_on_preempt").value_or(false);
    if (auto* f = get("checkpoint_storage_uri")) {
      c.storage_uri = read_string(*f, 2048);
      check_storage_uri(*f, c.storage_uri);
    }
  }

  // `size` is a fixed gang (min = max, 2..64); min_size and max_size an elastic one:
  // 1 <= min_size <= max_size, 2 <= max_size <= 64.
  template <typename Member>
  static void sizes(GangRequirement& gang, const json& g, const std::string& path, const Member& member) {
    const bool has_min = g.contains("min_size"), has_max = g.contains("max_size");
    if (g.contains("size")) {
      if (has_min || has_max)
        throw invalid_field(path + (has_min ? ".min_size" : ".max_size"),
                            "cannot be combined with " + path + ".size (size means min_size = max_size)");
      gang.size = gang.max_size = read_int(member("size"), 2, kMaxGangSize);
      return;
    }
    if (!has_min && !has_max) throw invalid_field(path + ".size", "is required (or min_size and max_size for an elastic gang)");
    if (!has_min) throw invalid_field(path + ".min_size", "is required with max_size");
    if (!has_max) throw invalid_field(path + ".max_size", "is required with min_size");
    gang.size = read_int(member("min_size"), 1, kMaxGangSize);
    gang.max_size = read_int(member("max_size"), 2, kMaxGangSize);
    if (gang.max_size < gang.size)
      throw invalid_field(path + ".max_size", "must be at least min_size (" + std::to_string(gang.size) + ")");
  }

  // ext_ml_gang {size | min_size + max_size, same_label | same_nvlink_domain, timeout_seconds}.
  void gang(Requirements& r) const {
    const Field* f = get("gang");
    if (!f) return;
    if (!f->value->is_object())
      throw invalid_field(f->path, "must be an object with size, or min_size and max_size (and optionally same_label, "
                                   "same_nvlink_domain, timeout_seconds)");
    check_members(*f->value, f->path, {"size", "min_size", "max_size", "same_label", "same_nvlink_domain", "timeout_seconds"});
    const json& g = *f->value;
    auto member = [&](const char* name) { return Field{&g[name], f->path + "." + name}; };
    sizes(r.hard.gang, g, f->path, member);
    if (g.contains("same_label")) {
      r.hard.gang.same_label = read_string(member("same_label"), 253);
      if (r.hard.gang.same_label.empty()) throw invalid_field(f->path + ".same_label", "must be a non-empty label key");
    }
    if (g.contains("same_nvlink_domain") && read_bool(member("same_nvlink_domain"))) {
      if (!r.hard.gang.same_label.empty())
        throw invalid_field(f->path + ".same_nvlink_domain", "cannot be combined with same_label (it means same_label " +
                                                                 std::string(kNvlinkDomainLabel) + ")");
      r.hard.gang.same_label = kNvlinkDomainLabel;
    }
    if (g.contains("timeout_seconds")) r.scheduling.gang_timeout_s = read_int(member("timeout_seconds"), 1, 3600);
    // A gang holds several workers at once; a reservation binds one job to one reserved capacity.
    if (auto* res = get("reservation_id"))
      throw invalid_field(f->path, "cannot be combined with " + res->path + " (a gang is not placed inside a reservation)");
  }

 private:
  const FieldMap& f_;
};

}  // namespace

std::optional<ComputeCapability> implied_compute_capability(std::string_view precision) {
  if (precision == "bf16") return ComputeCapability{8, 0};
  if (precision == "fp8") return ComputeCapability{8, 9};
  if (precision == "int8" || precision == "int4") return ComputeCapability{7, 5};
  if (precision == "fp16" || precision == "fp32") return ComputeCapability{7, 0};
  return std::nullopt;
}

bool Requirements::has_hard_constraints() const {
  const HardConstraints& h = hard;
  return (h.accelerator && *h.accelerator != Accelerator::cpu) || h.gpu.count > 0 || h.tpu.chip_count > 0 ||
         !h.tpu.type.empty() || h.memory_gb || h.cpu_cores || h.storage_gb || h.shm_size_gb || !h.node_selector.empty() ||
         !h.required_affinity.empty() || !h.anti_affinity.empty() || !h.pinned_model_id.empty() || !h.runtime.empty() ||
         !h.model_format.empty() || h.gang.size > 0;
}

std::map<std::string, const nlohmann::json*> ml_attributes(const nlohmann::json& job) {
  FieldMap fields;
  collect_meta(job, fields);       // lower precedence
  collect_top_level(job, fields);  // top level wins
  std::map<std::string, const nlohmann::json*> out;
  for (const auto& [name, field] : fields) out.emplace(name, field.value);
  return out;
}

Requirements parse_requirements(const nlohmann::json& job) {
  FieldMap fields;
  collect_meta(job, fields);       // lower precedence
  collect_top_level(job, fields);  // top level wins
  Requirements r;
  if (fields.empty()) return r;
  Parser p(fields);
  p.resources(r);
  p.model(r);
  p.compute(r);
  p.placement(r);
  p.preemption(r);
  p.checkpoints(r);
  p.gang(r);
  return r;
}

}  // namespace ojs::ml
