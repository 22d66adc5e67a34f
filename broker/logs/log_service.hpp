// Job logs: what the worker agent streams of each job's stdout and
// stderr (POST /ojs/v1/workers/logs), kept per job within --job-log-max-bytes (the
// most recent bytes; LogStore), read back by GET /ojs/v1/jobs/{id}/logs with tail
// (last lines), since (a cursor or a time) and an SSE follow that ends with the job.
// Follows are fed by one reader thread per broker, like the event hub: a follow
// holds no thread and no Redis connection while it waits.
#pragma once
#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "broker/events/event_subscription.hpp"
#include "broker/events/stream_slots.hpp"
#include "broker/jobs/job_service.hpp"
#include "broker/store/log_store.hpp"

namespace ojs::broker {

struct LogOptions {
  long long max_bytes = 1 << 20;               // kept per job (--job-log-max-bytes)
  std::shared_ptr<StreamSlots> slots;          // the broker's open streams (--max-event-streams), shared with the event hub
  std::chrono::milliseconds poll{200};         // the reader's cadence while follows are open
  std::chrono::milliseconds keep_alive{15000};
};

// GET .../logs parameters: tail (last N lines), since (cursor "<ms>-<seq>" or RFC 3339).
struct LogQuery {
  std::optional<long long> tail;
  std::string after;  // exclusive cursor ("" = from the first entry kept)
};

class LogService {
 public:
  LogService(JobService& jobs, LogStore& store, LogOptions options);
  ~LogService();
  void start();
  void stop();  // every follow ends

  // POST /ojs/v1/workers/logs body: {worker_id, job_id, chunks: [{stream, data}]}.
  nlohmann::json append(const nlohmann::json& body);
  // Throws OjsError naming the field for bad values.
  static LogQuery parse_query(const std::string& tail, const std::string& since);
  nlohmann::json read(const std::string& id, const LogQuery& query);
  // The SSE body of a follow: the entries after the query's cursor, then each new one
  // (event `log`, id = its cursor), then event `end` with the job's state once the job
  // is finished and its log read to the end.
  std::shared_ptr<EventSubscription> follow(const std::string& id, const LogQuery& query);

 private:
  struct Follow {
    std::string queue, id, after;
    std::shared_ptr<EventSubscription> sub;
  };
  void run();
  bool poll(Follow& f);  // false: the follow ended

  JobService& jobs_;
  LogStore& store_;
  const LogOptions options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Follow> follows_;
  bool stopping_ = false;
  std::thread reader_;
};

}  // namespace ojs::broker
