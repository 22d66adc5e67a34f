// The dead letter as the OJS API shows it (api/dead_letter_api.cpp, the admin
// job retry): a page across queues, retry and discard by id, each a store
// transition. Unknown ids are 404s naming the job.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "broker/admin/sources.hpp"

namespace ojs::broker::admin {

// {jobs[envelope], pagination{total, limit, offset}}, newest first per queue; all queues when `only` is empty.
nlohmann::json dead_letter_page(DeadLetterSources& s, const std::string& only, int offset, int limit);
// {total, by_queue{queue: count}, oldest_at?} (OpenAPI /admin/dead-letter/stats).
nlohmann::json dead_letter_stats(DeadLetterSources& s);
// Every dead-letter job (of `only`, or all queues) back to available, `limit` at most: {retried}.
nlohmann::json retry_all_dead(DeadLetterSources& s, const std::string& only, int limit);
// Back to available with its attempts reset; 404 when the job is unknown or not dead.
nlohmann::json retry_dead(DeadLetterSources& s, const std::string& id);
// Deleted for good (the job and its directory entry); 404 as retry_dead.
void discard_dead(DeadLetterSources& s, const std::string& id);
// The admin API's retry (ojs-admin-api.md §7.4) of a discarded (dead-letter or not) or
// cancelled job: 404 unknown, 409 naming its state otherwise.
nlohmann::json retry_job(DeadLetterSources& s, const std::string& id);
// §6.5: deletes a queue's finished jobs of the states (completed, discarded, cancelled)
// that finished before `before_ms`; returns how many.
long long purge_finished(DeadLetterSources& s, const std::string& queue, const std::vector<std::string>& states, std::int64_t before_ms);

}  // namespace ojs::broker::admin
