#include "broker/observability/metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <tuple>

namespace ojs::broker::obs {

namespace {

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void append_escaped(std::string& out, std::string_view value) {
  for (const char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
}

void append_labels(std::string& out, const Labels& labels) {
  if (labels.empty()) return;
  out += '{';
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ',';
    out += labels[i].first;
    out += "=\"";
    append_escaped(out, labels[i].second);
    out += '"';
  }
  out += '}';
}

// FETCH latency buckets (seconds): sub-millisecond for a warm memo, up to
// seconds for a Redis under pressure.
const std::vector<double> kFetchBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

constexpr const char* kFetchRoute = "/ojs/v1/workers/fetch";

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  std::sort(bounds_.begin(), bounds_.end());
}

void Histogram::observe(double value) {
  const auto bucket = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  std::lock_guard lock(mutex_);
  ++counts_[bucket];
  sum_ += value;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.bounds = bounds_;
  std::lock_guard lock(mutex_);
  std::uint64_t running = 0;
  for (const auto c : counts_) s.cumulative.push_back(running += c);
  s.count = running;
  s.sum = sum_;
  return s;
}

void Exposition::family(std::string_view name, std::string_view type, std::string_view help) {
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  text_ += help;
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += type;
  text_ += '\n';
}

void Exposition::sample(std::string_view name, const Labels& labels, double value) {
  text_ += name;
  append_labels(text_, labels);
  text_ += ' ';
  text_ += number(value);
  text_ += '\n';
}

void Exposition::histogram(std::string_view name, const Labels& labels, const Histogram::Snapshot& h) {
  const std::string bucket = std::string(name) + "_bucket";
  for (std::size_t i = 0; i < h.cumulative.size(); ++i) {
    Labels with_le = labels;
    with_le.emplace_back("le", i < h.bounds.size() ? number(h.bounds[i]) : "+Inf");
    sample(bucket, with_le, static_cast<double>(h.cumulative[i]));
  }
  sample(std::string(name) + "_sum", labels, h.sum);
  sample(std::string(name) + "_count", labels, static_cast<double>(h.count));
}

Metrics::Metrics() : fetch_(kFetchBuckets) {}

Metrics& Metrics::global() {
  static Metrics metrics;
  return metrics;
}

void Metrics::record_request(const std::string& method, const std::string& route, int status, double seconds) {
  if (method == "POST" && route == kFetchRoute) fetch_.observe(seconds);
  std::lock_guard lock(mutex_);
  ++requests_[{method, route, status}];
}

void Metrics::record_webhook_attempt(const std::string& outcome) {
  std::lock_guard lock(mutex_);
  ++webhook_attempts_[outcome];
}

void Metrics::record_webhook_dropped() {
  std::lock_guard lock(mutex_);
  ++webhook_dropped_;
}

void Metrics::record_dispatch(const std::string& queue, const std::string& pool, int jobs) {
  std::lock_guard lock(mutex_);
  dispatches_[{queue, pool}] += static_cast<std::uint64_t>(jobs);
}

void Metrics::render(Exposition& out) const {
  out.family("ojs_http_requests_total", "counter", "HTTP requests handled by this broker, by method, route pattern and status");
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, count] : requests_) {
      const auto& [method, route, status] = key;
      out.sample("ojs_http_requests_total", {{"method", method}, {"route", route}, {"status", std::to_string(status)}},
                 static_cast<double>(count));
    }
  }
  out.family("ojs_fetch_duration_seconds", "histogram",
             "Time this broker spent answering POST /ojs/v1/workers/fetch (matching, claim, response)");
  out.histogram("ojs_fetch_duration_seconds", {}, fetch_.snapshot());
  std::lock_guard lock(mutex_);
  out.family("ojs_webhook_deliveries_total", "counter",
             "Webhook delivery attempts by this broker, by outcome (delivered, failed: retried later, dead: no retry left, cancelled: subscription gone)");
  for (const auto& [outcome, count] : webhook_attempts_) out.sample("ojs_webhook_deliveries_total", {{"outcome", outcome}}, static_cast<double>(count));
  out.family("ojs_webhook_deliveries_dropped_total", "counter", "Webhook deliveries dropped because --webhooks-queue-size were waiting");
  out.sample("ojs_webhook_deliveries_dropped_total", {}, static_cast<double>(webhook_dropped_));
  out.family("ojs_scheduling_dispatch_total", "counter",
             "Jobs this broker's FETCHes started, by queue and the pool the FETCH named (\"\" = none)");
  for (const auto& [key, count] : dispatches_)
    out.sample("ojs_scheduling_dispatch_total", {{"queue", key.first}, {"pool", key.second}}, static_cast<double>(count));
}

}  // namespace ojs::broker::obs
