// Transport-neutral request/response: handlers never see Beast, so they compile
// fast and can be unit-tested without sockets.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
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
  // Whether the client has closed its connection (set by the server; unset: not known).
  // A handler that waits (a blocked PUSH) asks before it acts, so it does not store
  // what nobody will hear of.
  std::function<bool()> client_gone;

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
  std::string query_or(const std::string& key, const std::string& fallback) const {
    auto it = query.find(key);
    return it == query.end() ? fallback : it->second;
  }
};

// A response body produced over time (server-sent events). The server writes the
// headers, then pulls: the source answers each pull exactly once, at once or later
// and from any thread, with a chunk or with nullopt (end of the response). While a
// pull waits no thread is held: the connection only keeps the callback.
class BodySource {
 public:
  using Deliver = std::function<void(std::optional<std::string> chunk)>;
  virtual ~BodySource() = default;
  virtual void pull(Deliver deliver) = 0;
  // The connection is gone (client left, a write failed or timed out, the server
  // stopped): drop what is pending; a waiting pull is never answered.
  virtual void abandon() = 0;
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/openjobspec+json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<BodySource> stream;  // set: body comes from it (chunked), `body` is ignored, connection closes after
};

}  // namespace ojs::broker
