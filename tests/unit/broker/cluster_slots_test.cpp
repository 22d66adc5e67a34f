// Redis Cluster addressing on known values: the CRC16 check value, the slots the
// Redis Cluster spec gives as examples, hash tags, redirect texts, CLUSTER SLOTS.
#include <gtest/gtest.h>

#include "broker/store/cluster_slots.hpp"

namespace ojs::broker::cluster {
namespace {

TEST(ClusterSlots, Crc16MatchesTheXmodemCheckValue) {
  EXPECT_EQ(crc16("123456789"), 0x31C3);
  EXPECT_EQ(crc16(""), 0);
}

TEST(ClusterSlots, KeySlotMatchesRedis) {
  EXPECT_EQ(key_slot("foo"), 12182);  // CLUSTER KEYSLOT foo
  EXPECT_EQ(key_slot("123456789"), 0x31C3 & 16383);
}

TEST(ClusterSlots, HashTagsFollowTheSpecRules) {
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("{user1000}.followers"));
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  EXPECT_EQ(key_slot("foo{}{bar}"), crc16("foo{}{bar}") & 16383);  // empty tag: the whole key
  EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));           // up to the first '}'
  EXPECT_EQ(key_slot("foo{bar}{zap}"), key_slot("bar"));            // only the first tag
  EXPECT_EQ(key_slot("foo{bar"), crc16("foo{bar") & 16383);         // no closing brace
  EXPECT_EQ(key_slot("ojs:{gpu}:job:0193"), key_slot("ojs:{gpu}:ready:abc"));
}

TEST(ClusterSlots, CommonSlotRefusesCrossSlotKeys) {
  EXPECT_EQ(common_slot({"ojs:{gpu}:a", "ojs:{gpu}:b"}), key_slot("gpu"));
  try {
    common_slot({"ojs:{gpu}:a", "ojs:{cpu}:b"});
    FAIL() << "cross-slot keys accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ojs:{cpu}:b"), std::string::npos) << e.what();
  }
  EXPECT_THROW(common_slot({}), std::invalid_argument);
}

TEST(ClusterSlots, ParsesMovedAndAsk) {
  auto moved = parse_redirect("MOVED 3999 127.0.0.1:6381");
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->kind, Redirect::Kind::moved);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->node, (NodeAddress{"127.0.0.1", 6381}));
  auto ask = parse_redirect("ASK 0 ::1:7000");
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->kind, Redirect::Kind::ask);
  EXPECT_EQ(ask->node, (NodeAddress{"::1", 7000}));
}

TEST(ClusterSlots, RejectsMalformedRedirects) {
  for (const char* bad : {"ERR unknown command", "MOVED", "MOVED 3999", "MOVED x 127.0.0.1:1", "MOVED 16384 h:1",
                          "MOVED -1 h:1", "MOVED 1 127.0.0.1", "MOVED 1 :80", "MOVED 1 h:0", "MOVED 1 h:65536", "MOVED 1 h:7x"})
    EXPECT_FALSE(parse_redirect(bad)) << bad;
}

RedisValue integer(long long v) { return RedisValue{RedisValue::Type::integer, v, {}, {}}; }
RedisValue string(const std::string& s) { return RedisValue{RedisValue::Type::string, 0, s, {}}; }
RedisValue array(std::vector<RedisValue> e) { return RedisValue{RedisValue::Type::array, 0, {}, std::move(e)}; }
RedisValue range(long long first, long long last, const std::string& host, long long port) {
  return array({integer(first), integer(last), array({string(host), integer(port), string("id")}),
                array({string("127.0.0.1"), integer(9999), string("replica")})});
}

TEST(ClusterSlots, SlotMapFromClusterSlots) {
  auto map = SlotMap::from_cluster_slots(
      array({range(0, 5460, "127.0.0.1", 7000), range(5461, 10922, "127.0.0.1", 7001), range(10923, 16383, "127.0.0.1", 7002)}));
  EXPECT_TRUE(map.complete());
  EXPECT_EQ(map.masters().size(), 3u);  // replicas are not masters
  EXPECT_EQ(*map.master_of(0), (NodeAddress{"127.0.0.1", 7000}));
  EXPECT_EQ(*map.master_of(12182), (NodeAddress{"127.0.0.1", 7002}));
  map.assign(12182, {"127.0.0.1", 7000});  // what a MOVED does
  EXPECT_EQ(*map.master_of(12182), (NodeAddress{"127.0.0.1", 7000}));
  EXPECT_EQ(map.master_of(16384), nullptr);
}

TEST(ClusterSlots, PartialAndMalformedMaps) {
  auto partial = SlotMap::from_cluster_slots(array({range(0, 100, "h", 1)}));
  EXPECT_FALSE(partial.complete());
  EXPECT_EQ(partial.master_of(101), nullptr);
  EXPECT_THROW(SlotMap::from_cluster_slots(string("x")), std::invalid_argument);
  EXPECT_THROW(SlotMap::from_cluster_slots(array({array({integer(0)})})), std::invalid_argument);
  EXPECT_THROW(SlotMap::from_cluster_slots(array({range(10, 5, "h", 1)})), std::invalid_argument);
  EXPECT_THROW(SlotMap::from_cluster_slots(array({range(0, 16384, "h", 1)})), std::invalid_argument);
}

}  // namespace
}  // namespace ojs::broker::cluster
