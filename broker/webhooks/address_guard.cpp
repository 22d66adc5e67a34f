#include "broker/webhooks/address_guard.hpp"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstring>
#include <memory>

#include "ojs/core/error.hpp"

namespace ojs::broker::webhooks {

namespace {

constexpr std::size_t kMaxUrlLength = 2048;

struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};

std::string url_part(CURLU* url, CURLUPart part, unsigned flags = 0) {
  char* value = nullptr;
  if (curl_url_get(url, part, &value, flags) != CURLUE_OK || !value) return {};
  std::string out(value);
  curl_free(value);
  return out;
}

// IPv4 address in host order.
std::string forbidden_v4(std::uint32_t a) {
  auto in = [a](std::uint32_t net, int bits) { return bits == 0 || (a >> (32 - bits)) == (net >> (32 - bits)); };
  if (in(0x00000000, 8)) return "unspecified (0.0.0.0/8)";
  if (in(0x7f000000, 8)) return "loopback (127.0.0.0/8)";
  if (in(0x0a000000, 8) || in(0xac100000, 12) || in(0xc0a80000, 16)) return "private (RFC 1918)";
  if (in(0x64400000, 10)) return "shared address space (CGNAT, 100.64.0.0/10)";
  if (in(0xa9fe0000, 16)) return "link-local (169.254.0.0/16)";
  if (in(0xc0000000, 24)) return "IETF protocol assignments (192.0.0.0/24)";
  if (in(0xc6120000, 15)) return "benchmarking (198.18.0.0/15)";
  if (in(0xe0000000, 4)) return "multicast (224.0.0.0/4)";
  if (in(0xf0000000, 4)) return "reserved (240.0.0.0/4)";
  return "";
}

std::string forbidden_v6(const in6_addr& addr) {
  const auto* b = addr.s6_addr;
  static constexpr std::array<unsigned char, 16> kZero{};
  if (std::memcmp(b, kZero.data(), 16) == 0) return "unspecified (::)";
  if (std::memcmp(b, kZero.data(), 15) == 0 && b[15] == 1) return "loopback (::1)";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local (fe80::/10)";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "site-local (fec0::/10)";
  if ((b[0] & 0xfe) == 0xfc) return "unique local (fc00::/7)";
  if (b[0] == 0xff) return "multicast (ff00::/8)";
  // An IPv4 address inside IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d,
  // compatible ::a.b.c.d) reaches that IPv4 address: judged as one.
  static constexpr std::array<unsigned char, 12> kMapped{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static constexpr std::array<unsigned char, 12> kNat64{0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(b, kMapped.data(), 12) == 0 || std::memcmp(b, kNat64.data(), 12) == 0 || std::memcmp(b, kZero.data(), 12) == 0) {
    const std::uint32_t v4 = (std::uint32_t{b[12]} << 24) | (std::uint32_t{b[13]} << 16) | (std::uint32_t{b[14]} << 8) | b[15];
    auto reason = forbidden_v4(v4);
    if (!reason.empty()) return "IPv4 " + reason + " inside IPv6";
  }
  return "";
}

std::string numeric(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text, sizeof text);
  else if (address->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text, sizeof text);
  return text;
}

struct AddrInfoDeleter {
  void operator()(addrinfo* a) const { freeaddrinfo(a); }
};
using AddrInfo = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// getaddrinfo; `numeric_only`: the host only as an address (inet_aton's forms too:
// "127.1", "0x7f.0.0.1", "2130706433"), no lookup.
AddrInfo lookup(const std::string& host, bool numeric_only, int* status) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = numeric_only ? AI_NUMERICHOST : 0;
  addrinfo* found = nullptr;
  *status = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  return AddrInfo(*status == 0 ? found : nullptr);
}

bool is_localhost_name(std::string host) {
  for (auto& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!host.empty() && host.back() == '.') host.pop_back();
  return host == "localhost" || (host.size() > 10 && host.ends_with(".localhost"));
}

}  // namespace

WebhookUrl parse_webhook_url(const std::string& text, const std::string& field) {
  if (text.empty() || text.size() > kMaxUrlLength)
    throw invalid_field(field, "must be an absolute http or https URL of 1-" + std::to_string(kMaxUrlLength) + " characters");
  std::unique_ptr<CURLU, UrlDeleter> url(curl_url());
  if (!url) throw std::bad_alloc();
  if (curl_url_set(url.get(), CURLUPART_URL, text.c_str(), 0) != CURLUE_OK)
    throw invalid_field(field, "must be an absolute http or https URL (it does not parse as one)");
  WebhookUrl out;
  out.text = text;
  out.scheme = url_part(url.get(), CURLUPART_SCHEME);
  if (out.scheme != "http" && out.scheme != "https") throw invalid_field(field, "must use the http or https scheme");
  if (!url_part(url.get(), CURLUPART_USER).empty() || !url_part(url.get(), CURLUPART_PASSWORD).empty())
    throw invalid_field(field, "must not carry credentials (user:password@); authenticate the delivery by its signature");
  out.host = url_part(url.get(), CURLUPART_HOST);
  if (out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']') out.host = out.host.substr(1, out.host.size() - 2);
  if (const auto zone = out.host.find('%'); zone != std::string::npos) out.host.resize(zone);  // an IPv6 zone id names a link
  if (out.host.empty()) throw invalid_field(field, "must name a host");
  out.port = std::atoi(url_part(url.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT).c_str());
  if (out.port <= 0 || out.port > 65535) throw invalid_field(field, "must name a port in 1-65535");
  return out;
}

std::string forbidden_reason(const sockaddr* address) {
  if (address->sa_family == AF_INET)
    return forbidden_v4(ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr));
  if (address->sa_family == AF_INET6) return forbidden_v6(reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr);
  return "not an IP address";
}

void check_literal_host(const WebhookUrl& url, bool allow_private, const std::string& field) {
  if (allow_private) return;
  const auto refuse = [&](const std::string& reason) {
    throw OjsError(ErrorCode::validation_error,
                   field + " points at a " + reason + " address: webhooks are not sent there unless the broker runs with --webhooks-allow-private",
                   {{"field", field}, {"rule", "must not point at a loopback, link-local, private or unspecified address"}, {"reason", reason}});
  };
  if (is_localhost_name(url.host)) refuse("loopback (localhost)");
  int status = 0;
  const auto found = lookup(url.host, /*numeric_only=*/true, &status);
  for (auto* a = found.get(); a; a = a->ai_next)
    if (auto reason = forbidden_reason(a->ai_addr); !reason.empty()) refuse(reason);
}

ResolvedTarget resolve_target(const WebhookUrl& url, bool allow_private) {
  if (!allow_private && is_localhost_name(url.host)) return {"", url.host + " is a loopback name (--webhooks-allow-private is off)", true};
  int status = 0;
  const auto found = lookup(url.host, /*numeric_only=*/false, &status);
  if (!found) return {"", "cannot resolve " + url.host + ": " + gai_strerror(status)};
  ResolvedTarget out;
  for (auto* a = found.get(); a; a = a->ai_next) {
    const auto text = numeric(a->ai_addr);
    if (text.empty()) continue;
    if (!allow_private) {
      // Any forbidden address among the name's refuses it: a name that answers
      // both kinds would otherwise pick its target by chance.
      if (auto reason = forbidden_reason(a->ai_addr); !reason.empty())
        return {"", url.host + " resolves to " + text + ", a " + reason + " address (--webhooks-allow-private is off)", true};
    }
    if (out.address.empty()) out.address = text;
  }
  if (out.address.empty()) out.error = "cannot resolve " + url.host + ": no IP address";
  return out;
}

}  // namespace ojs::broker::webhooks
