// The id of the first job in a FETCH reply ({"jobs": [{"id": ...}, ...]}) or in the
// `fetch` part of an ACK-with-fetch reply ({"fetch": {"jobs": [...]}}), read with
// nlohmann's SAX parser: the reply is checked as JSON but no document is built. A
// worker thread reads one per job; parsing into a DOM and its allocations were about a
// quarter of loadgen's CPU on the machine it shares with the broker (docs/benchmarks.md
// "A lean load generator").
#pragma once
#include <string>
#include <string_view>

namespace ojs::bench {

enum class JobsAt { top, fetch };  // where the "jobs" array is: the reply itself, or its "fetch" object

// "" when the reply is not JSON, has no such array, or the array is empty.
std::string first_job_id(std::string_view reply, JobsAt where);

}  // namespace ojs::bench
