// A job as stored in its Redis hash, and its rendering as the OJS envelope.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "broker/store/redis_client.hpp"
#include "ojs/core/object_text.hpp"
#include "ojs/ml/types.hpp"
#include "ojs/ml/worker_load.hpp"

namespace ojs::broker {

struct JobRecord {
  // Looked up by name without building a std::string (the envelope reads ~40
  // names per job, most of them longer than the short-string buffer).
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const noexcept { return std::hash<std::string_view>{}(name); }
  };
  std::unordered_map<std::string, std::string, NameHash, std::equal_to<>> fields;

  const std::string& get(std::string_view name) const;  // "" when absent
  bool has(std::string_view name) const { return fields.find(name) != fields.end(); }
  std::optional<std::int64_t> get_int(std::string_view name) const;
  const std::string& id() const { return get("id"); }
  const std::string& state() const { return get("state"); }
  // Its gang's members' workers by rank (the gang_workers field; "" for an entry that
  // is not a string), empty for a job with none.
  std::vector<std::string> gang_workers() const;
  // Whether the worker is a member of the job's gang.
  bool has_gang_member(const std::string& worker_id) const;
  const std::string& queue() const { return get("queue"); }
  int attempt() const;

  // What the job weighs on a worker that holds it: the GPUs and devices it took
  // there (a gang member's own share), the labels anti-affinity reads, its own
  // anti-affinity rules (ml::job_labels / ml::job_anti_affinity) and the GPU memory it
  // declared (ml::job_gpu_memory_gb). nullopt when `worker_id` does not hold it: another
  // worker does, or it ended (a cancelled job whose process is still stopping weighs
  // until its worker reports it gone). Needs the fields WorkerStore reads for its held sets.
  struct Load {
    int gpus = 0;
    std::vector<int> devices;
    ml::Labels labels;
    std::vector<ml::AffinityRule> anti_affinity;
    ml::JobDemand demand;  // what it declared: GPU memory per device, CPU cores, host memory, TPU chips
  };
  std::optional<Load> load_on(const std::string& worker_id) const;
  // Its priority class rank (spot 0, on-demand 1, reserved 2) from its rank_base, which
  // stays the priority band whatever the queue's policy (escalation rewrites it).
  int priority_class_rank() const;
  // The GPUs a claimed (not gang) job holds: those charged to the budget at claim, else its gpu_count.
  int held_gpus() const { return static_cast<int>(get_int("charged_gpus").value_or(get_int("gpus").value_or(0))); }

  // The document as stored (the `doc` field): the producer's, less what the job's
  // fields hold (id, queue, type) and what is the same for every job that did not
  // say otherwise (specversion 1.0, an empty meta, the default retry policy); the
  // envelope puts them back. A job is so stored once (~280 B less a job).
  static std::string stored_document(const nlohmann::json& document);
  // The producer's document, with what stored_document left out put back (a job
  // stored before keeps its whole document: nothing is missing); null when the
  // stored text is not a readable object.
  nlohmann::json document() const;
  // Its priority and GPU count: the document's (a job stored before also holds them
  // as fields, read first).
  int priority() const;
  int gpu_count() const;

  // The OJS job envelope: the producer's document with system fields overlaid.
  nlohmann::json envelope() const;
  // The same, as text: the stored document's members are not parsed (a FETCH's and an
  // ACK's reply carry it as stored; envelope() parses this).
  ObjectText envelope_text() const;

  // Field/value pairs (HGETALL, or a script's job reply: a later pair overrides, a nil value deletes).
  static JobRecord from_flat_array(const RedisValue& pairs);
  // The HMGET of a job's fields `names`, and the record its answer gives (a nil value:
  // the field is absent).
  static std::vector<std::string> read_fields(const std::string& job_key, const std::vector<std::string>& names);
  static JobRecord from_fields(const std::vector<std::string>& names, const std::vector<RedisValue>& values);
};

// Device indices from their JSON text ("[0,1]"); empty for "" or anything else.
std::vector<int> device_list(const std::string& json_text);

}  // namespace ojs::broker
