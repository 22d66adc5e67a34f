// A gang's sizes as its job's record holds them, and what they say to a person:
// the members it starts with (gang_size: an elastic gang's min_size), the most it
// runs with (gang_max_size, elastic gangs only), the members it holds now
// (gang_workers) and its generation. The job diagnosis, the estimate, the overview
// (the status page) and ojsctl show them; none of them decides anything: the
// scheduler's gang decision (scheduling/gang_decision.hpp) does.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/job_record.hpp"

namespace ojs::broker {

struct GangSizes {
  int min_size = 0;    // the members it starts with (a fixed gang's size)
  int max_size = 0;    // the most it grows to (== min_size unless elastic)
  int size = 0;        // the members it holds now: forming, those held so far; running, its world size
  std::vector<std::string> workers;  // those members' workers, by rank
  int generation = 0;  // running: 1 at the start, +1 per resize; 0 while it waits
  bool elastic() const { return max_size > min_size; }
};

// nullopt when the job is no gang.
std::optional<GangSizes> gang_sizes(const JobRecord& job);

// {min_size, max_size, elastic, size, generation}: the names ext_ml_gang uses.
nlohmann::json gang_sizes_json(const GangSizes& gang);

// "starts once 2 members are placed (min_size); may grow to 8 (max_size) while it runs",
// or for a fixed gang "starts once all 4 members are placed".
std::string gang_start_text(const GangSizes& gang);

// "runs at 3 of up to 8 members (generation 2)", or for a fixed gang "runs as 4 members".
std::string gang_running_text(const GangSizes& gang);

// The worker a running elastic gang may grow onto first: among the workers seen that
// refuse a member only because they are busy (code wait), the one whose running job
// declares the earliest end (started + ext_ml_estimated_duration_seconds, or its
// deadline). Work ahead of the gang in the queue may still take it first.
struct GrowthNext {
  std::string worker_id;
  std::string job_id;
  std::int64_t at_ms = 0;
};

// The job diagnosis's `gang`: the sizes, and a `message` saying what its start waits
// for (waiting) or, for a running elastic gang, what its growth waits on, read from its
// class's diagnosis summary (`class_summary`: the FETCH verdicts of the workers seen,
// its own members' left out: they cannot join it again):
// `grow_waits_on` is at_max_size, no_worker_seen, no_eligible_worker (every worker seen
// is refused: the summary's message says why) or work_ahead (a worker fits a member,
// but the scheduler gives it to work ahead of the gang in the queue's order).
// `next`: when growth waits on busy workers, the one expected to free first (below).
nlohmann::json gang_diagnosis(const GangSizes& gang, bool running, const nlohmann::json& class_summary,
                              const std::optional<GrowthNext>& next = std::nullopt);


}  // namespace ojs::broker
