#include "ojs/client/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <strings.h>
#include <stdexcept>

namespace ojs {

namespace {

void global_init_once() {
  static std::once_flag flag;
  std::call_once(flag, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t write_body(char* data, size_t size, size_t nmemb, void* user) {
  static_cast<std::string*>(user)->append(data, size * nmemb);
  return size * nmemb;
}

size_t write_header(char* data, size_t size, size_t nmemb, void* user) {
  const std::string line(data, size * nmemb);
  const auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    const auto first = value.find_first_not_of(" \t");
    const auto last = value.find_last_not_of(" \t\r\n");
    value = first == std::string::npos ? "" : value.substr(first, last - first + 1);
    (*static_cast<std::map<std::string, std::string>*>(user))[name] = value;
  }
  return size * nmemb;
}

}  // namespace

HttpClient::HttpClient(HttpClientOptions options) : options_(std::move(options)) {
  global_init_once();
  curl_ = curl_easy_init();
  if (!curl_) throw std::runtime_error("curl_easy_init failed");
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

namespace {
size_t stream_body(char* data, size_t size, size_t nmemb, void* user) {
  const auto& on_body = *static_cast<const std::function<bool(const std::string&)>*>(user);
  return on_body(std::string(data, size * nmemb)) ? size * nmemb : 0;  // 0: curl stops (CURLE_WRITE_ERROR)
}
}  // namespace

HttpResponse HttpClient::stream(const std::string& path, const std::function<bool(const std::string& chunk)>& on_body) {
  return perform("GET", path, {}, {"Accept: text/event-stream"}, &on_body);
}

HttpResponse HttpClient::request(const std::string& method, const std::string& path, const std::string& body,
                                 const std::vector<std::string>& extra_headers) {
  return perform(method, path, body, extra_headers, nullptr);
}

HttpResponse HttpClient::perform(const std::string& method, const std::string& path, const std::string& body,
                                 const std::vector<std::string>& extra_headers,
                                 const std::function<bool(const std::string&)>* on_body) {
  CURL* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);  // keeps the connection cache, clears per-request options
  HttpResponse response;
  const std::string url = options_.base_url + path;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, on_body ? 0L : options_.timeout_ms);
  if (on_body) curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, options_.timeout_ms);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  if (method == "POST" || method == "PUT" || method == "PATCH" || !body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  if (method == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  if (!options_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());
  if (options_.insecure_skip_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }

  curl_slist* headers = nullptr;
  bool has_content_type = false;
  for (const auto& h : extra_headers) {
    headers = curl_slist_append(headers, h.c_str());
    if (h.size() >= 13 && strncasecmp(h.c_str(), "content-type:", 13) == 0) has_content_type = true;
  }
  if (!has_content_type) headers = curl_slist_append(headers, "Content-Type: application/openjobspec+json");
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  std::string auth;
  if (!options_.bearer_token.empty()) {
    auth = "Authorization: Bearer " + options_.bearer_token;
    headers = curl_slist_append(headers, auth.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (on_body) {
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, stream_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, const_cast<std::function<bool(const std::string&)>*>(on_body));
  } else {
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  }
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, write_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response.headers);

  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    response.status = 0;
    response.transport_error = curl_easy_strerror(rc);
    return response;
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace ojs
