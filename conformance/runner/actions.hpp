// How a step becomes an HTTP request.
//
// Dialect A steps name the HTTP method themselves ("action": "POST", "path",
// "headers", "body" | "raw_body"). Dialect B steps name an action from the table
// below and give its `request`; each entry turns that request into a call. To add
// an action, add one row to kActions in actions.cpp (and a line in README.md).
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ojs::conformance {

struct HttpCall {
  std::string method;
  std::string path;                    // may carry a query string
  std::optional<std::string> body;     // serialized body, sent verbatim
  std::vector<std::string> headers;    // "Name: value"
  std::string describe() const { return method + " " + path; }
};

struct ActionDef {
  std::string_view name;
  std::string_view summary;  // one line, for --actions and the README
  // Builds the call from the step's (template-resolved) `request`. Throws
  // std::invalid_argument when the request lacks something it needs.
  HttpCall (*build)(const nlohmann::json& request);
  // What an empty response body means for this action (JSON text), so that
  // expectations hold for servers that answer 204: a fetch with no job is
  // {"jobs": []}. Empty: an empty body stays empty.
  std::string_view empty_body_means = {};
};

const std::vector<ActionDef>& action_table();
const ActionDef* find_action(std::string_view name);

// True for the upper-case method names dialect A uses as actions.
bool is_http_method(std::string_view action);

// Dialect A: builds the call from the step itself (method = action).
HttpCall build_http_step(const nlohmann::json& step);

// "Name: value" lines from a {"Name": "value"} object (non-strings dumped).
std::vector<std::string> header_lines(const nlohmann::json& headers);

// The OJS path of one job, "/ojs/v1/jobs/<id>".
std::string job_path(const std::string& id);

}  // namespace ojs::conformance
