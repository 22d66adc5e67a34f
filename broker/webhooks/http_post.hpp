// One webhook POST over libcurl, to the address the SSRF guard checked: the URL's
// host is pinned to it (no second lookup), no proxy, no redirect followed (a
// redirect could lead where the guard never looked), http and https only.
#pragma once
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "broker/webhooks/address_guard.hpp"

namespace ojs::broker::webhooks {

struct PostResult {
  long status = 0;            // 0: no HTTP answer (error says why)
  std::string error;          // transport error
  std::string body;           // the first kMaxResponseExcerpt bytes of the answer
  long retry_after_s = -1;    // Retry-After in seconds when the answer had one
  std::int64_t duration_ms = 0;
};

inline constexpr std::size_t kMaxResponseExcerpt = 1024;

// `headers`: "Name: value" lines. `address`: the numeric address to connect to.
// `cancel`: set by another thread, the request is abandoned (a broker stopping).
PostResult post_json(const WebhookUrl& url, const std::string& address, const std::vector<std::string>& headers,
                     const std::string& body, std::chrono::milliseconds timeout, const std::atomic<bool>& cancel);

}  // namespace ojs::broker::webhooks
