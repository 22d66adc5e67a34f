// Where a webhook may be sent (SSRF guard). A subscription's URL is checked when it
// is stored (its host when that is an address or localhost) and again before every
// delivery, on the addresses the name resolves to then: loopback, link-local,
// private (RFC 1918, ULA), CGNAT, unspecified, multicast and reserved addresses
// are refused unless the operator allows them (--webhooks-allow-private). The
// delivery connects to the address that was checked, never to a second lookup.
#pragma once
#include <sys/socket.h>

#include <string>

namespace ojs::broker::webhooks {

struct WebhookUrl {
  std::string text;    // as given
  std::string scheme;  // http | https
  std::string host;    // without IPv6 brackets
  int port = 0;        // the scheme's default when the URL names none
};

// The URL's parts; OjsError naming `field` (400) when it is not an absolute
// http(s) URL with a host and no credentials, or longer than 2048 characters.
WebhookUrl parse_webhook_url(const std::string& text, const std::string& field = "url");

// Why the address may not be a webhook's target ("" = it may): "loopback", ...
std::string forbidden_reason(const sockaddr* address);

// At creation: the host is an address (in any form the resolver takes as one) or a
// localhost name that is forbidden. OjsError validation_error (422) naming `field`.
void check_literal_host(const WebhookUrl& url, bool allow_private, const std::string& field = "url");

// Before a delivery: the host's addresses now. `address` is the one to connect to
// (numeric); `error` says why there is none (a lookup failure, or a forbidden
// address among those the name has).
struct ResolvedTarget {
  std::string address;
  std::string error;
  bool forbidden = false;  // refused by the rules (not worth a retry), not a lookup failure
};
ResolvedTarget resolve_target(const WebhookUrl& url, bool allow_private);

}  // namespace ojs::broker::webhooks
