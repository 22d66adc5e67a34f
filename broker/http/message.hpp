// Transport-neutral request/response: handlers never see Beast, so they compile
// fast and can be unit-tested without sockets.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ojs::broker {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string path;                            // without query string, percent-decoded
  std::map<std::string, std::string> query;    // decoded query parameters
  std::map<std::string, std::string> headers;  // lower-cased names
  std::map<std::string, std::string> params;   // path parameters filled by the router
  std::string body;

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
  std::string query_or(const std::string& key, const std::string& fallback) const {
    auto it = query.find(key);
    return it == query.end() ? fallback : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/openjobspec+json";
  std::vector<std::pair<std::string, std::string>> headers;
};

}  // namespace ojs::broker
