#include "broker/webhooks/http_post.hpp"

#include <curl/curl.h>

#include <cstdlib>
#include <memory>
#include <mutex>

namespace ojs::broker::webhooks {

namespace {

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct ListDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

size_t keep_excerpt(char* data, size_t size, size_t nmemb, void* user) {
  auto* out = static_cast<std::string*>(user);
  const auto n = size * nmemb;
  if (out->size() < kMaxResponseExcerpt) out->append(data, std::min(n, kMaxResponseExcerpt - out->size()));
  return n;  // the rest is read and dropped: the connection ends cleanly
}

size_t read_retry_after(char* data, size_t size, size_t nmemb, void* user) {
  const std::string line(data, size * nmemb);
  constexpr std::string_view name = "retry-after:";
  if (line.size() > name.size()) {
    std::string head = line.substr(0, name.size());
    for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (head == name) {
      char* end = nullptr;
      const long seconds = std::strtol(line.c_str() + name.size(), &end, 10);
      if (end != line.c_str() + name.size() && seconds >= 0) *static_cast<long*>(user) = seconds;
    }
  }
  return size * nmemb;
}

int abandon_when_cancelled(void* cancel, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(cancel)->load() ? 1 : 0;  // non-zero: curl aborts the transfer
}

}  // namespace

PostResult post_json(const WebhookUrl& url, const std::string& address, const std::vector<std::string>& headers,
                     const std::string& body, std::chrono::milliseconds timeout, const std::atomic<bool>& cancel) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  PostResult out;
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) {
    out.error = "curl_easy_init failed";
    return out;
  }
  std::unique_ptr<curl_slist, ListDeleter> header_list;
  for (const auto& h : headers) header_list.reset(curl_slist_append(header_list.release(), h.c_str()));
  // The host resolves to the checked address only (IPv6 in brackets, as curl takes it).
  const auto pinned_address = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  std::unique_ptr<curl_slist, ListDeleter> resolve(
      curl_slist_append(nullptr, (url.host + ":" + std::to_string(url.port) + ":" + pinned_address).c_str()));
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.text.c_str());
  curl_easy_setopt(c, CURLOPT_RESOLVE, resolve.get());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, header_list.get());
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min<std::int64_t>(timeout.count(), 10000)));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_excerpt);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &out.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, read_retry_after);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &out.retry_after_s);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, abandon_when_cancelled);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(&cancel));
  const auto started = std::chrono::steady_clock::now();
  const CURLcode rc = curl_easy_perform(c);
  out.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  if (rc != CURLE_OK) {
    out.error = curl_easy_strerror(rc);
    return out;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out.status);
  return out;
}

}  // namespace ojs::broker::webhooks
