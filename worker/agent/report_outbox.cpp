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

std::optional<nlohmann::json> ReportOutbox::flush(BrokerApi& api, Clock::time_point now, const nlohmann::json* next_fetch) {
  if (now < next_try_) return std::nullopt;
  std::optional<nlohmann::json> fetched;
  while (!pending_.empty()) {
    Report& report = pending_.front();
    const bool carries_fetch = next_fetch && pending_.size() == 1 && report.kind != Report::Kind::checkpoint;
    if (carries_fetch) report.body["fetch"] = *next_fetch;
    BrokerReply reply = send(api, report);
    if (carries_fetch) report.body.erase("fetch");  // a report sent again later asks anew
    // Refused for good with the fetch attached (a broker that bounds FETCH tighter than
    // this agent asks): the report itself must still arrive, so it goes again alone.
    if (carries_fetch && !reply.ok() && !reply.retryable()) reply = send(api, report);
    if (reply.ok()) {
      backoff_.reset();
      if (carries_fetch && reply.body.is_object() && reply.body.contains("fetch") && reply.body["fetch"].is_object())
        fetched = reply.body["fetch"];
    } else if (reply.retryable()) {
      const auto delay = backoff_.next_delay();
      next_try_ = now + delay;
      spdlog::warn("job {} {} not delivered ({}); retrying in {} ms", report.job_id, name(report.kind),
                   reply.describe(), delay.count());
      return std::nullopt;
    } else {
      spdlog::warn("job {} {} refused by broker: {}", report.job_id, name(report.kind), reply.describe());
    }
    pending_.pop_front();
  }
  return fetched;
}

}  // namespace ojs::worker
