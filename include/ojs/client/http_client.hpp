// A small blocking HTTP/1.1 client over libcurl with connection reuse
// (keep-alive). Used by the worker agent, ojsctl, the conformance runner,
// the load generator and the integration tests. One instance per thread.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ojs {

struct HttpResponse {
  long status = 0;               // 0 when the request never reached a server
  std::string body;
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string transport_error;   // curl's message when status == 0
};

struct HttpClientOptions {
  std::string base_url;          // e.g. "http://127.0.0.1:8080"
  std::string bearer_token;      // sent as Authorization when not empty
  long timeout_ms = 30000;
  std::string ca_file;           // TLS: trust this CA bundle
  bool insecure_skip_verify = false;
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // path is appended to base_url. extra_headers are "Name: value" lines.
  HttpResponse request(const std::string& method, const std::string& path, const std::string& body = {},
                       const std::vector<std::string>& extra_headers = {});
  HttpResponse get(const std::string& path) { return request("GET", path); }
  // A GET whose body is handed to `on_body` as it arrives (server-sent events, a log
  // follow), without the client's timeout; `on_body` returns false to stop reading.
  // The response's body stays empty; its status is 0 when stopped by on_body.
  HttpResponse stream(const std::string& path, const std::function<bool(const std::string& chunk)>& on_body);
  HttpResponse post(const std::string& path, const std::string& body) { return request("POST", path, body); }

  const HttpClientOptions& options() const { return options_; }

 private:
  HttpResponse perform(const std::string& method, const std::string& path, const std::string& body,
                       const std::vector<std::string>& extra_headers, const std::function<bool(const std::string&)>* on_body);
  HttpClientOptions options_;
  void* curl_;  // CURL*, kept for connection reuse
};

}  // namespace ojs
