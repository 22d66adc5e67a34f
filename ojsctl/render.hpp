// Human-readable renderings of broker answers for ojsctl (kubectl-describe style).
// Pure functions from JSON to text, so they are easy to test and reuse.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ojsctl {

// Left-aligned columns, a header row, two spaces between columns.
std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

std::string render_why(const nlohmann::json& diagnosis, const nlohmann::json* budget);  // GET /jobs/{id}/diagnosis
std::string render_budget(const nlohmann::json& budget);                                // GET .../budget
std::string render_reconciliation(const nlohmann::json& reconciliation);                // GET/POST .../reconcile
std::string render_workers(const nlohmann::json& workers);                               // GET /admin/workers
std::string render_jobs(const nlohmann::json& listing);                                  // GET .../jobs, /admin/jobs, /dead-letter
std::string render_job(const nlohmann::json& job);                                       // one job envelope
std::string render_usage(const nlohmann::json& usage);                                   // GET /admin/usage

}  // namespace ojsctl
