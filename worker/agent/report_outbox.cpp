#include "worker/agent/report_outbox.hpp"

#include <spdlog/spdlog.h>

namespace ojs::worker {

namespace {

BrokerReply send(BrokerApi& api, const Report& report) {
  switch (report.kind) {
    case Report::Kind::ack: return api.ack(report.body);
    case Report::Kind::nack: return api.nack(report.body);
    case Report::Kind::checkpoint: return api.commit_checkpoint(report.job_id, report.body);
  }
  return {};
}

const char* name(Report::Kind kind) {
  switch (kind) {
    case Report::Kind::ack: return "ack";
    case Report::Kind::nack: return "nack";
    case Report::Kind::checkpoint: return "checkpoint";
  }
  return "report";
}

}  // namespace

void ReportOutbox::flush(BrokerApi& api, Clock::time_point now) {
  if (now < next_try_) return;
  while (!pending_.empty()) {
    const Report& report = pending_.front();
    const BrokerReply reply = send(api, report);
    if (reply.ok()) {
      backoff_.reset();
    } else if (reply.retryable()) {
      const auto delay = backoff_.next_delay();
      next_try_ = now + delay;
      spdlog::warn("job {} {} not delivered ({}); retrying in {} ms", report.job_id, name(report.kind),
                   reply.describe(), delay.count());
      return;
    } else {
      spdlog::warn("job {} {} refused by broker: {}", report.job_id, name(report.kind), reply.describe());
    }
    pending_.pop_front();
  }
}

}  // namespace ojs::worker
