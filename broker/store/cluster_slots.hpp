// Redis Cluster addressing, the part that needs no connection: which of the
// 16384 slots a key hashes to (CRC16 of the key or of its {hash tag}), which
// master serves a slot (from CLUSTER SLOTS), and what a MOVED / ASK redirect
// says. The routing client builds on this; it is pure so it can be tested on
// the slot maths and the redirect texts alone (see the Redis Cluster spec,
// "Keys distribution model" and "Redirection and resharding").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/store/redis_client.hpp"

namespace ojs::broker::cluster {

constexpr int kSlotCount = 16384;

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), as Redis uses it.
std::uint16_t crc16(std::string_view data);

// The slot of a key: only the part between the first '{' and the next '}' is
// hashed when that part is not empty ("ojs:{gpu}:job:1" and "ojs:{gpu}:ready:c"
// share a slot), otherwise the whole key.
int key_slot(std::string_view key);

// The one slot every key of a script call lives in; throws std::invalid_argument
// naming the first key that falls elsewhere (a cross-slot call cannot run on a
// cluster, so it is a programming error, caught by tests, never sent).
int common_slot(const std::vector<std::string>& keys);

struct NodeAddress {
  std::string host;
  int port = 0;
  std::string describe() const { return host + ":" + std::to_string(port); }
  bool operator==(const NodeAddress&) const = default;
};

// A redirect in an error reply: "MOVED 3999 127.0.0.1:6381" (the slot lives
// there now: refresh the map) or "ASK 3999 127.0.0.1:6381" (during a migration:
// send ASKING then the command to that node, once, without changing the map).
struct Redirect {
  enum class Kind { moved, ask };
  Kind kind = Kind::moved;
  int slot = 0;
  NodeAddress node;
};
std::optional<Redirect> parse_redirect(std::string_view error);

// Slot -> master, as CLUSTER SLOTS reports it. Slots no range covers have no node.
class SlotMap {
 public:
  // The reply of CLUSTER SLOTS: [[start, end, [host, port, id, ...], replicas...], ...].
  // Throws std::invalid_argument on a reply of another shape.
  static SlotMap from_cluster_slots(const RedisValue& reply);

  const NodeAddress* master_of(int slot) const;
  void assign(int slot, const NodeAddress& node);  // after a MOVED
  const std::vector<NodeAddress>& masters() const { return nodes_; }
  bool complete() const;  // every slot has a master

 private:
  std::uint16_t node_index(const NodeAddress& node);
  static constexpr std::uint16_t kNone = 0xffff;
  std::vector<NodeAddress> nodes_;
  std::vector<std::uint16_t> owner_ = std::vector<std::uint16_t>(kSlotCount, kNone);
};

}  // namespace ojs::broker::cluster
