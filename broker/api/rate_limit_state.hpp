// A queue's start-rate limit as it stands now: what GET /ojs/v1/rate-limits shows
// and what a PUSH to the queue answers in OJS's X-RateLimit-* headers
// (ojs-http-binding.md §18.1, ojs-rate-limiting.md §10.4). The limit counts job
// starts in a sliding window (enforced at FETCH): the headers tell a producer how
// much room the window has, not a limit on its requests.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "broker/api/api.hpp"
#include "broker/governance/queue_config.hpp"
#include "broker/http/message.hpp"

namespace ojs::broker {

struct RateWindowState {
  long long limit = 0;      // starts allowed per period
  long long current = 0;    // starts in the window now
  std::int64_t resets_at_ms = 0;  // when the window next has room (its oldest start leaves it; now when none)
};

// The window of a limit that has a rate (nullopt for a concurrency-only limit).
std::optional<RateWindowState> rate_window_state(ApiContext& ctx, const std::string& queue, const governance::QueueRateLimit& limit);

// X-RateLimit-Limit, -Remaining and -Reset (Unix seconds) of the window, onto a reply.
void add_rate_limit_headers(HttpResponse& reply, const RateWindowState& state);

}  // namespace ojs::broker
