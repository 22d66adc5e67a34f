// Request-body parsing and response building shared by every API module.
#pragma once
#include <nlohmann/json.hpp>

#include "broker/http/message.hpp"
#include "ojs/core/object_text.hpp"

namespace ojs::broker {

// Nesting bound of request bodies (docs/operations.md "Security"): deeper
// documents are refused before parsing, since copying and dumping them recurse.
// The size bound is the HTTP layer's --max-body-bytes (413).
inline constexpr int kMaxJsonDepth = 64;

// Parses the body as a JSON object; 400 invalid_payload when it is not JSON or
// nests deeper than kMaxJsonDepth.
nlohmann::json parse_json_body(const HttpRequest& request);
HttpResponse json_reply(int status, const nlohmann::json& body);

// A retry answered under its Idempotency-Key (ojs-bulk-operations.md §10): the first
// request's status and `location`, what it stored as it is now, `Idempotent-Replayed: true`.
HttpResponse replayed_reply(int status, const nlohmann::json& body, const std::string& location);

// A reply assembled from members already serialized (FETCH, ACK, NACK).
HttpResponse object_reply(int status, const ObjectText& body);

// The {name} path parameter as a queue name; 400 naming `name` when invalid.
std::string queue_name_param(const HttpRequest& request);
// An integer query parameter in [min, max], `fallback` when absent; 400 naming it otherwise.
int int_query(const HttpRequest& request, const char* name, int fallback, int min, int max);

}  // namespace ojs::broker
