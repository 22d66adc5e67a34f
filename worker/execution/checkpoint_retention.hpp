// Checkpoints beyond a job's ext_ml_checkpoint_max_count are deleted from storage,
// not only dropped from the broker's record. Under a file:// URI the worker does it
// itself: each entry (file or directory) directly under the job's own checkpoint
// prefix ($OJS_CHECKPOINT_URI) is one checkpoint; the newest max_count by
// modification time stay. Names starting with '.' are left alone (a checkpoint being
// written under a temporary name). Under another scheme (s3://, gs://, az://) the
// worker cannot list the store: it remembers the storage keys the job committed and
// names those beyond max_count, for the operator's command to delete
// (retention_command.hpp).
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ojs::worker {

// The paths removed (none for another scheme, a missing directory, or max_count < 1).
std::vector<std::string> prune_file_checkpoints(const std::string& checkpoint_uri, int max_count);

// The storage keys of one job's committed checkpoints under a scheme other than
// file://, oldest first: those the broker still keeps when the job arrives (its
// `checkpoints`), then each one it commits here.
class StoredCheckpoints {
 public:
  StoredCheckpoints(std::string checkpoint_uri, int max_count, const nlohmann::json& kept_by_broker);

  // Records a committed checkpoint's metadata; returns the URIs now beyond the newest
  // max_count, to delete. Only keys inside the job's own prefix count (a relative key
  // is resolved against it): a job cannot have the agent delete anything else.
  std::vector<std::string> record(const nlohmann::json& metadata);

 private:
  std::string checkpoint_uri_;  // the job's own prefix, "" when it has none or it is file://
  int max_count_;
  std::vector<std::string> keys_;
};

}  // namespace ojs::worker
