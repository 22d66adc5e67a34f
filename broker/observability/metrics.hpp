// Metrics of this broker process (request counts by route and status, the FETCH
// latency histogram) and the Prometheus text exposition format (version 0.0.4)
// they are rendered in. Cluster-wide gauges (queue depth, budgets, workers) are
// computed from Redis at scrape time, see overview.hpp; docs/operations.md lists
// every metric.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ojs::broker::obs {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Fixed upper bounds (seconds); observations are counted in the first bucket
// they fit, rendered cumulatively with a final +Inf bucket.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<std::uint64_t> cumulative;  // one per bound, then +Inf
    std::uint64_t count = 0;
    double sum = 0;
  };
  Snapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;  // per bucket, last = above every bound
  double sum_ = 0;
};

// Builds a text exposition: one `family` (HELP and TYPE) followed by its samples.
class Exposition {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const Labels& labels, double value);
  void histogram(std::string_view name, const Labels& labels, const Histogram::Snapshot& h);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

inline constexpr const char* kExpositionContentType = "text/plain; version=0.0.4; charset=utf-8";

// The process-wide registry; the router reports every request to it.
class Metrics {
 public:
  static Metrics& global();

  // route: the matched pattern ("/ojs/v1/jobs/{id}") or "unmatched".
  void record_request(const std::string& method, const std::string& route, int status, double seconds);
  // Webhook delivery attempts by outcome (delivered, failed, dead, cancelled), and
  // deliveries dropped because the delivery queue was full.
  void record_webhook_attempt(const std::string& outcome);
  void record_webhook_dropped();
  // Jobs a FETCH started from a queue, with the pool it named ("" = none).
  void record_dispatch(const std::string& queue, const std::string& pool, int jobs);
  void render(Exposition& out) const;

 private:
  Metrics();
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, int>, std::uint64_t> requests_;  // method, route, status
  Histogram fetch_;
  std::map<std::string, std::uint64_t> webhook_attempts_;  // outcome -> count
  std::uint64_t webhook_dropped_ = 0;
  std::map<std::pair<std::string, std::string>, std::uint64_t> dispatches_;  // queue, pool
};

}  // namespace ojs::broker::obs
