// The routing client's decisions without a cluster: which keys a command
// carries, which slot it must run in (a cross-slot call is refused), what each
// error reply asks for (redirect, retry or the caller's), and the
// redis-cluster:// URL. The routing itself is tested on a real cluster
// (tests/cluster/cluster_routing_test.cpp).
#include <gtest/gtest.h>

#include "broker/store/cluster_client.hpp"

namespace ojs::broker::cluster {
namespace {

RedisValue error(const std::string& text) {
  RedisValue v;
  v.type = RedisValue::Type::error;
  v.str = text;
  return v;
}

TEST(ClusterClient, ScriptKeysAreItsDeclaredKeys) {
  EXPECT_EQ(command_keys({"FCALL", "claim_abc", "2", "ojs:{q}:a", "ojs:{q}:b", "arg"}),
            (std::vector<std::string>{"ojs:{q}:a", "ojs:{q}:b"}));
  EXPECT_TRUE(command_keys({"FCALL", "claim_abc", "0", "arg"}).empty());
  EXPECT_EQ(command_keys({"fcall", "claim_abc", "9", "k"}), (std::vector<std::string>{"k"}));  // numkeys past the end
  EXPECT_EQ(command_keys({"FCALL_RO", "f", "1", "k", "arg"}), (std::vector<std::string>{"k"}));
}

TEST(ClusterClient, PlainCommandKeys) {
  EXPECT_EQ(command_keys({"HGET", "ojs:{q}:job:1", "state"}), (std::vector<std::string>{"ojs:{q}:job:1"}));
  EXPECT_EQ(command_keys({"DEL", "a", "b"}), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(command_keys({"PING"}).empty());
  EXPECT_TRUE(command_keys({"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', function() end)"}).empty());
  EXPECT_TRUE(command_keys({"CLUSTER", "SLOTS"}).empty());
}

TEST(ClusterClient, SlotOfACommand) {
  EXPECT_EQ(command_slot({"GET", "ojs:{gpu}:seq"}), key_slot("gpu"));
  EXPECT_EQ(command_slot({"FCALL", "x", "2", "ojs:{gpu}:a", "ojs:{gpu}:b"}), key_slot("gpu"));
  EXPECT_EQ(command_slot({"PING"}), -1);
}

TEST(ClusterClient, CrossSlotCallIsRefusedNamingTheKey) {
  try {
    command_slot({"FCALL", "x", "2", "ojs:{gpu}:a", "ojs:queues"});
    FAIL() << "cross-slot call accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("ojs:queues"), std::string::npos) << e.what();
  }
  EXPECT_THROW(command_slot({"DEL", "ojs:{a}:x", "ojs:{b}:x"}), std::logic_error);
}

TEST(ClusterClient, RedirectsAndRetriesAreTold) {
  EXPECT_EQ(classify(error("MOVED 3999 127.0.0.1:6381")), ReplyAction::moved);
  EXPECT_EQ(classify(error("ASK 3999 127.0.0.1:6381")), ReplyAction::ask);
  EXPECT_EQ(classify(error("TRYAGAIN Multiple keys request during rehashing of slot")), ReplyAction::retry);
  EXPECT_EQ(classify(error("CLUSTERDOWN The cluster is down")), ReplyAction::retry);
  EXPECT_EQ(classify(error("READONLY You can't write against a read only replica.")), ReplyAction::retry);
  EXPECT_EQ(classify(error("LOADING Redis is loading the dataset in memory")), ReplyAction::retry);
  EXPECT_EQ(classify(error("MASTERDOWN Link with MASTER is down")), ReplyAction::retry);
  // The caller's errors stay the caller's (a missing library is RedisPool::eval's to load).
  EXPECT_EQ(classify(error("ERR Function not found")), ReplyAction::done);
  EXPECT_EQ(classify(error("ERR wrong number of arguments")), ReplyAction::done);
  RedisValue ok;
  ok.type = RedisValue::Type::status;
  ok.str = "MOVED";  // a status reply is never a redirect
  EXPECT_EQ(classify(ok), ReplyAction::done);
}

TEST(ClusterClient, ClusterUrl) {
  const auto ep = parse_redis_url("redis-cluster://:secret@10.0.0.1:7000,10.0.0.2:7001");
  EXPECT_EQ(ep.cluster_seeds, (std::vector<std::string>{"10.0.0.1:7000", "10.0.0.2:7001"}));
  EXPECT_EQ(ep.password, "secret");
  EXPECT_THROW(parse_redis_url("redis-cluster://10.0.0.1"), std::invalid_argument);
  EXPECT_THROW(parse_redis_url("redis-cluster://10.0.0.1:7000,"), std::invalid_argument);
  EXPECT_TRUE(parse_redis_url("redis://10.0.0.1:7000").cluster_seeds.empty());
}

}  // namespace
}  // namespace ojs::broker::cluster
