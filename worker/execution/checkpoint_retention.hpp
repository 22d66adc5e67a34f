// Checkpoints beyond a job's ext_ml_checkpoint_max_count are deleted from storage,
// not only dropped from the broker's record. Under a file:// URI the worker does it
// itself: each entry (file or directory) directly under the job's own checkpoint
// prefix ($OJS_CHECKPOINT_URI) is one checkpoint; the newest max_count by
// modification time stay. Names starting with '.' are left alone (a checkpoint being
// written under a temporary name). Other schemes are not touched here.
#pragma once
#include <string>
#include <vector>

namespace ojs::worker {

// The paths removed (none for another scheme, a missing directory, or max_count < 1).
std::vector<std::string> prune_file_checkpoints(const std::string& checkpoint_uri, int max_count);

}  // namespace ojs::worker
