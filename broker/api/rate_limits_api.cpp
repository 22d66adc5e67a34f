// GET /ojs/v1/rate-limits and /ojs/v1/rate-limits/{key} (ojs-rate-limiting.md §10.1,
// §10.3): the state of each rate limit. Here a rate limit is a queue's (enforced at
// FETCH: a job over it stays available); a job's options.rate_limit becomes its
// queue's when the queue has none, and its `key` is the name the limit is inspected
// by (without one, the queue's name). A key several queues name answers the first
// queue by name, with every one in `queues`.
#include "broker/api/api.hpp"
#include "broker/api/json_io.hpp"
#include "broker/api/rate_limit_state.hpp"
#include "broker/governance/queue_configs.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

namespace {

using nlohmann::json;

std::string key_of(const std::string& queue, const governance::QueueRateLimit& limit) { return limit.key.empty() ? queue : limit.key; }

// One queue's limit, what it holds now and what waits behind it.
json partition(ApiContext& ctx, const std::string& queue, const governance::QueueRateLimit& limit) {
  const auto state = ctx.queues.state(queue);
  const auto count = [&](const char* s) { return state.counts.count(s) ? state.counts.at(s) : 0; };
  json out = {{"key", key_of(queue, limit)}, {"queue", queue}, {"waiting_count", count("available")}};
  if (limit.concurrency) {
    const long long active = count("active");
    out["concurrency"] = {{"limit", *limit.concurrency}, {"active", active}, {"available", std::max(0LL, *limit.concurrency - active)}};
  }
  if (const auto rate = rate_window_state(ctx, queue, limit))
    out["rate"] = {{"limit", rate->limit}, {"period", limit.rate_period}, {"current_count", rate->current},
                   {"window_resets_at", format_rfc3339(rate->resets_at_ms)}};
  return out;
}

// Every queue with a rate limit, by name: (queue, its limit).
std::vector<std::pair<std::string, governance::QueueRateLimit>> limited_queues(ApiContext& ctx, governance::QueueConfigs& configs) {
  std::vector<std::pair<std::string, governance::QueueRateLimit>> out;
  for (const auto& q : ctx.queues.names())
    if (const auto& limit = configs.cached(q)->rate_limit; !limit.empty()) out.emplace_back(q, limit);
  return out;
}

}  // namespace

std::optional<RateWindowState> rate_window_state(ApiContext& ctx, const std::string& queue, const governance::QueueRateLimit& limit) {
  if (!limit.rate_limit) return std::nullopt;
  const auto now = now_ms();
  const auto window = ctx.queues.rate_window(queue, now - limit.rate_period_ms);
  // The window is sliding: it has room again when its oldest start leaves it.
  return RateWindowState{*limit.rate_limit, window.starts, window.oldest_ms ? *window.oldest_ms + limit.rate_period_ms : now};
}

void add_rate_limit_headers(HttpResponse& reply, const RateWindowState& state) {
  reply.headers.emplace_back("X-RateLimit-Limit", std::to_string(state.limit));
  reply.headers.emplace_back("X-RateLimit-Remaining", std::to_string(std::max(0LL, state.limit - state.current)));
  reply.headers.emplace_back("X-RateLimit-Reset", std::to_string((state.resets_at_ms + 999) / 1000));
}

void register_rate_limits_api(Router& router, ApiContext& ctx, governance::QueueConfigs& configs) {
  router.add("GET", "/ojs/v1/rate-limits", [&ctx, &configs](const HttpRequest& r) {
    const int page = int_query(r, "page", 1, 1, 1000000);
    const int per_page = int_query(r, "per_page", 20, 1, 100);
    const auto limited = limited_queues(ctx, configs);
    json items = json::array();
    for (std::size_t i = static_cast<std::size_t>(page - 1) * per_page; i < limited.size() && items.size() < static_cast<std::size_t>(per_page); ++i)
      items.push_back(partition(ctx, limited[i].first, limited[i].second));
    return json_reply(200, {{"items", items}, {"pagination", {{"total", limited.size()}, {"page", page}, {"per_page", per_page}}}});
  });
  router.add("GET", "/ojs/v1/rate-limits/{key}", [&ctx, &configs](const HttpRequest& r) {
    const auto& key = r.params.at("key");
    json found;
    json queues = json::array();
    for (const auto& [queue, limit] : limited_queues(ctx, configs)) {
      if (key_of(queue, limit) != key) continue;
      queues.push_back(queue);
      if (found.is_null()) found = partition(ctx, queue, limit);
    }
    if (found.is_null())
      throw OjsError(ErrorCode::not_found, "no rate limit named " + key + " (a queue's rate limit is named by its rate_limit.key, else the queue)",
                     {{"key", key}});
    found["queues"] = queues;
    return json_reply(200, found);
  });
}

}  // namespace ojs::broker
