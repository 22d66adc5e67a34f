// JSON objects as text, assembled from members already serialized: a reply that
// carries one value twice (FETCH: `jobs` and `job`; ACK: the job's fields and `job`)
// serializes it once, and a stored job document joins the reply without being parsed.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace ojs {

// The compact text of a value, invalid UTF-8 replaced (ids and bodies are echoed).
std::string json_text(const nlohmann::json& value);

// An object's text from its members' texts: byte for byte what json_text writes for
// the same object (members in key order, as nlohmann::json keeps them).
class ObjectText {
 public:
  ObjectText() = default;
  // The object serialized once and split into its members.
  explicit ObjectText(const nlohmann::json& object);
  // The members of an object's compact text as the serializer writes it (a stored
  // document); none when the text is not such an object.
  static std::optional<ObjectText> from_text(const std::string& text);

  void put(const std::string& key, const std::string& text);  // `text` is JSON already
  void put_json(const std::string& key, const nlohmann::json& value) { put(key, json_text(value)); }
  // The same for a string or an integer, without building a JSON value (the envelope's
  // system fields: a dozen per job).
  void put_string(const std::string& key, const std::string& value);
  void put_int(const std::string& key, std::int64_t value);
  bool has(const std::string& key) const { return members_.count(key) > 0; }
  // A member's value text; empty when absent.
  std::string value_text(const std::string& key) const;
  std::string str() const;

 private:
  std::map<std::string, std::string> members_;  // key -> its member's text, "\"key\":value"
};

}  // namespace ojs
