// The order a pool's FETCH tries its queues in (scheduling/queue_order.cpp), one
// strategy at a time, and the sliding minute the weighted order reads.
#include <gtest/gtest.h>

#include <map>

#include "broker/scheduling/queue_order.hpp"

using ojs::broker::PoolStrategy;
using ojs::broker::QueueTurn;
using ojs::broker::order_pool_queues;
using Order = std::vector<std::string>;

TEST(QueueOrder, StrictKeepsTheListedOrderWhateverTheCounts) {
  const std::vector<QueueTurn> q = {{"critical", 1, 50, 1}, {"default", 1, 0, 90}};
  EXPECT_EQ(order_pool_queues(PoolStrategy::strict, q, 7), (Order{"critical", "default"}));
}

TEST(QueueOrder, RoundRobinStartsOneFurtherEachTurn) {
  const std::vector<QueueTurn> q = {{"a"}, {"b"}, {"c"}};
  EXPECT_EQ(order_pool_queues(PoolStrategy::round_robin, q, 0), (Order{"a", "b", "c"}));
  EXPECT_EQ(order_pool_queues(PoolStrategy::round_robin, q, 1), (Order{"b", "c", "a"}));
  EXPECT_EQ(order_pool_queues(PoolStrategy::round_robin, q, 5), (Order{"c", "a", "b"}));
  EXPECT_TRUE(order_pool_queues(PoolStrategy::round_robin, {}, 3).empty());
}

TEST(QueueOrder, WeightedPutsTheQueueFurthestBelowItsShareFirst) {
  // 3:1 weights; a had 6 of 8 recent starts (0.75 / 3 = 0.25), b 2 (0.25 / 1): a tie, listed order.
  EXPECT_EQ(order_pool_queues(PoolStrategy::weighted, {{"a", 3, 6, 0}, {"b", 1, 2, 0}}, 0), (Order{"a", "b"}));
  // One more start of a puts it above its share: b is next.
  EXPECT_EQ(order_pool_queues(PoolStrategy::weighted, {{"a", 3, 7, 0}, {"b", 1, 2, 0}}, 0), (Order{"b", "a"}));
  // Nothing started yet: every share is 0, the listed order.
  EXPECT_EQ(order_pool_queues(PoolStrategy::weighted, {{"a", 1, 0, 0}, {"b", 5, 0, 0}}, 0), (Order{"a", "b"}));
}

TEST(QueueOrder, WeightedServesInProportionToTheWeightsOverTime) {
  // Every queue backlogged: each FETCH takes one job from the queue ordered first.
  std::vector<QueueTurn> q = {{"a", 3}, {"b", 2}, {"c", 1}};
  std::map<std::string, int> served;
  for (int i = 0; i < 60; ++i) {
    const auto first = order_pool_queues(PoolStrategy::weighted, q, 0).front();
    ++served[first];
    for (auto& t : q)
      if (t.queue == first) t.recent_dispatches += 1;
  }
  EXPECT_EQ(served["a"], 30);
  EXPECT_EQ(served["b"], 20);
  EXPECT_EQ(served["c"], 10);
}

TEST(QueueOrder, LeastLoadedTakesTheDeepestBacklogFirst) {
  const std::vector<QueueTurn> q = {{"a", 1, 0, 3}, {"b", 1, 0, 40}, {"c", 1, 0, 3}};
  EXPECT_EQ(order_pool_queues(PoolStrategy::least_loaded, q, 0), (Order{"b", "a", "c"}));
}

TEST(QueueOrder, StrategyNamesRoundTrip) {
  for (auto name : {"strict", "round-robin", "weighted", "least-loaded"})
    EXPECT_EQ(ojs::broker::to_string(*ojs::broker::parse_pool_strategy(name)), name);
  EXPECT_FALSE(ojs::broker::parse_pool_strategy("fifo"));
  EXPECT_FALSE(ojs::broker::parse_pool_strategy("Weighted"));
}

TEST(QueueOrder, LastMinuteCountsThePartOfThePreviousMinuteStillInside) {
  EXPECT_DOUBLE_EQ(ojs::broker::dispatches_last_minute(4, 10, 0), 14);
  EXPECT_DOUBLE_EQ(ojs::broker::dispatches_last_minute(4, 10, 45000), 6.5);
  EXPECT_DOUBLE_EQ(ojs::broker::dispatches_last_minute(4, 10, 60000), 4);
}
