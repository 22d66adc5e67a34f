#include "broker/store/cluster_slots.hpp"

#include <charconv>
#include <stdexcept>

namespace ojs::broker::cluster {

namespace {

bool parse_int(std::string_view s, int& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::uint16_t crc16(std::string_view data) {
  std::uint16_t crc = 0;
  for (const unsigned char byte : data) {
    crc ^= static_cast<std::uint16_t>(byte) << 8;
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021) : static_cast<std::uint16_t>(crc << 1);
  }
  return crc;
}

int key_slot(std::string_view key) {
  const auto open = key.find('{');
  if (open != std::string_view::npos) {
    const auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
  }
  return crc16(key) & (kSlotCount - 1);
}

int common_slot(const std::vector<std::string>& keys) {
  if (keys.empty()) throw std::invalid_argument("a cluster call needs at least one key to choose its node");
  const int slot = key_slot(keys.front());
  for (const auto& k : keys)
    if (key_slot(k) != slot)
      throw std::invalid_argument("key " + k + " is in slot " + std::to_string(key_slot(k)) + ", not slot " +
                                  std::to_string(slot) + " of " + keys.front() + ": cross-slot call");
  return slot;
}

std::optional<Redirect> parse_redirect(std::string_view error) {
  Redirect r;
  if (error.rfind("MOVED ", 0) == 0) {
    r.kind = Redirect::Kind::moved;
    error.remove_prefix(6);
  } else if (error.rfind("ASK ", 0) == 0) {
    r.kind = Redirect::Kind::ask;
    error.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const auto space = error.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  if (!parse_int(error.substr(0, space), r.slot) || r.slot < 0 || r.slot >= kSlotCount) return std::nullopt;
  const auto address = error.substr(space + 1);
  const auto colon = address.rfind(':');  // IPv6 hosts contain colons: the port is after the last
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  r.node.host = std::string(address.substr(0, colon));
  if (!parse_int(address.substr(colon + 1), r.node.port) || r.node.port <= 0 || r.node.port > 65535) return std::nullopt;
  return r;
}

SlotMap SlotMap::from_cluster_slots(const RedisValue& reply) {
  if (reply.type != RedisValue::Type::array) throw std::invalid_argument("CLUSTER SLOTS reply is not an array");
  SlotMap map;
  for (const auto& range : reply.elements) {
    const auto& e = range.elements;
    if (range.type != RedisValue::Type::array || e.size() < 3 || e[0].type != RedisValue::Type::integer ||
        e[1].type != RedisValue::Type::integer || e[2].type != RedisValue::Type::array || e[2].elements.size() < 2 ||
        e[2].elements[1].type != RedisValue::Type::integer)
      throw std::invalid_argument("CLUSTER SLOTS range is not [start, end, [host, port, ...], ...]");
    const long long first = e[0].integer, last = e[1].integer;
    if (first < 0 || last >= kSlotCount || first > last)
      throw std::invalid_argument("CLUSTER SLOTS range " + std::to_string(first) + "-" + std::to_string(last) + " is out of bounds");
    const NodeAddress master{e[2].elements[0].str, static_cast<int>(e[2].elements[1].integer)};
    const auto index = map.node_index(master);
    for (long long s = first; s <= last; ++s) map.owner_[s] = index;
  }
  return map;
}

std::uint16_t SlotMap::node_index(const NodeAddress& node) {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i] == node) return static_cast<std::uint16_t>(i);
  nodes_.push_back(node);
  return static_cast<std::uint16_t>(nodes_.size() - 1);
}

const NodeAddress* SlotMap::master_of(int slot) const {
  if (slot < 0 || slot >= kSlotCount || owner_[slot] == kNone) return nullptr;
  return &nodes_[owner_[slot]];
}

void SlotMap::assign(int slot, const NodeAddress& node) {
  if (slot < 0 || slot >= kSlotCount) throw std::invalid_argument("slot " + std::to_string(slot) + " out of range");
  owner_[slot] = node_index(node);
}

bool SlotMap::complete() const {
  for (const auto o : owner_)
    if (o == kNone) return false;
  return true;
}

}  // namespace ojs::broker::cluster
