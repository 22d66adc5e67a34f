// JSON objects as text, assembled from members already serialized: a reply that
// carries one value twice (FETCH: `jobs` and `job`; ACK: the job's fields and `job`)
// serializes it once, and a stored job document joins the reply without being parsed.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // A member's value text; empty when absent.
  std::string value_text(std::string_view key) const;
  std::string str() const;

 private:
  // A member is two slices of `bytes_`: its decoded key (the order) and its
  // text, "\"key\":value". A stored document is copied once and split in place, and a
  // put appends: no allocation per member (a FETCH, an ACK and a PUSH each assemble
  // a job's envelope of ~25 members; a map of strings cost ~50k instructions a job).
  struct Member {
    std::uint32_t key_at, key_size, text_at, text_size;
  };
  std::string_view key_of(const Member& m) const { return std::string_view(bytes_).substr(m.key_at, m.key_size); }
  std::string_view text_of(const Member& m) const { return std::string_view(bytes_).substr(m.text_at, m.text_size); }
  const Member* find(std::string_view key) const;
  std::size_t begin_put(const std::string& key);
  void end_put(const std::string& key, std::size_t at);
  std::vector<Member>::iterator lower_bound(std::string_view key);
  std::string bytes_;  // replaced members' bytes stay (a reply is short-lived)
  std::vector<Member> members_;  // in key order, as the serializer writes them
};

}  // namespace ojs
