// Reports the broker must hear about (ACK, NACK, checkpoint commits), kept in
// order and retried with backoff while the broker is unreachable, so a job's
// checkpoint is always committed before the NACK that releases it.
#pragma once
#include "worker/agent/backoff.hpp"
#include "worker/agent/broker_api.hpp"

#include <chrono>
#include <deque>
#include <optional>
#include <string>

namespace ojs::worker {

struct Report {
  enum class Kind { ack, nack, checkpoint };
  Kind kind;
  std::string job_id;
  nlohmann::json body;
};

class ReportOutbox {
 public:
  using Clock = std::chrono::steady_clock;

  void push(Report report) { pending_.push_back(std::move(report)); }
  // Sends in order; stops at the first retryable failure and waits out the
  // backoff. A report the broker refuses for good (4xx) is logged and dropped.
  // `next_fetch`: a FETCH body the last report carries when it is an ACK or NACK
  // (docs/http-api.md "ACK with fetch"); returns the reply's `fetch` part, none
  // when that report was not sent or the broker does not know the extension.
  std::optional<nlohmann::json> flush(BrokerApi& api, Clock::time_point now = Clock::now(),
                                      const nlohmann::json* next_fetch = nullptr);
  bool empty() const { return pending_.empty(); }
  // Whether a flush now would send an ACK or NACK last, one that could carry a FETCH.
  bool ends_with_report(Clock::time_point now) const {
    return now >= next_try_ && !pending_.empty() && pending_.back().kind != Report::Kind::checkpoint;
  }
  std::size_t size() const { return pending_.size(); }

 private:
  std::deque<Report> pending_;
  ExponentialBackoff backoff_;
  Clock::time_point next_try_{};
};

}  // namespace ojs::worker
