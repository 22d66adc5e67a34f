// Request-body parsing and response building shared by every API module.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "broker/http/message.hpp"

namespace ojs::broker {

// Nesting bound of request bodies (docs/operations.md "Security"): deeper
// documents are refused before parsing, since copying and dumping them recurse.
// The size bound is the HTTP layer's --max-body-bytes (413).
inline constexpr int kMaxJsonDepth = 64;

// Parses the body as a JSON object; 400 invalid_payload when it is not JSON or
// nests deeper than kMaxJsonDepth.
nlohmann::json parse_json_body(const HttpRequest& request);
HttpResponse json_reply(int status, const nlohmann::json& body);

// The text json_reply writes for a value (compact; invalid UTF-8 replaced).
std::string json_text(const nlohmann::json& value);

// An object's text assembled from its members' texts, byte for byte what json_text
// writes for the same object (members in key order, as nlohmann::json keeps them).
// For replies that carry one value twice (FETCH: `jobs` and `job`; ACK/NACK: the job's
// fields and `job`, as the OpenAPI shapes have them): the value is serialized once.
class ObjectText {
 public:
  ObjectText() = default;
  // The object serialized once and split into its members.
  explicit ObjectText(const nlohmann::json& object);
  void put(const std::string& key, const std::string& text);  // `text` is JSON already
  void put_json(const std::string& key, const nlohmann::json& value) { put(key, json_text(value)); }
  std::string str() const;

 private:
  std::map<std::string, std::string> members_;  // key -> its member's text, "\"key\":value"
};
HttpResponse object_reply(int status, const ObjectText& body);

// The {name} path parameter as a queue name; 400 naming `name` when invalid.
std::string queue_name_param(const HttpRequest& request);
// An integer query parameter in [min, max], `fallback` when absent; 400 naming it otherwise.
int int_query(const HttpRequest& request, const char* name, int fallback, int min, int max);

}  // namespace ojs::broker
