// A held job keeps its deadlines: an expires_at or a reservation timeout that passes
// while it is held discards it once it is released, without a FETCH reaching it (the
// maintenance drops the index entries of jobs that do not wait; release lists them again).
#include <gtest/gtest.h>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

class HoldDeadlines : public ::testing::Test {
 protected:
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--preemption-interval-ms", "100"}};
  Api api{broker.url()};
  std::size_t listed(const std::string& key) { return redis_lines(redis, {"ZRANGE", key, "0", "-1"}).size(); }
};

TEST_F(HoldDeadlines, AnExpiryPassedWhileHeldDiscardsTheReleasedJob) {
  const auto id = api.push({{"type", "t"}, {"args", json::array()}, {"options", {{"queue", "hd-exp"}, {"expires_at", "+PT1S"}}}});
  ASSERT_EQ(api.post("/ojs/v1/jobs/" + id + "/hold", json::object()).status, 200);
  // The maintenance pass meets the due entry of a job that does not wait, and drops it.
  ASSERT_TRUE(wait_until([&] { return listed("ojs:{hd-exp}:expiring") == 0; }));
  ASSERT_EQ(api.post("/ojs/v1/jobs/" + id + "/release", json::object()).status, 200);
  const auto info = wait_for_state(api, id, "discarded", 15000);
  EXPECT_EQ(info["state"], "discarded") << info.dump();
  EXPECT_EQ(info["error"]["code"], "expired") << info.dump();
}

TEST_F(HoldDeadlines, AReservationTimeoutPassedWhileHeldDiscardsTheReleasedJob) {
  const auto id = api.push(ml_job("hd-resv", {{"ext_ml_reservation_id", "nope"}, {"ext_ml_reservation_timeout_s", 1}}));
  ASSERT_EQ(api.post("/ojs/v1/jobs/" + id + "/hold", json::object()).status, 200);
  ASSERT_TRUE(wait_until([&] { return listed("ojs:{hd-resv}:reservation-waits") == 0; }));
  ASSERT_EQ(api.post("/ojs/v1/jobs/" + id + "/release", json::object()).status, 200);
  const auto info = wait_for_state(api, id, "discarded", 15000);
  EXPECT_EQ(info["state"], "discarded") << info.dump();
  EXPECT_EQ(info["error"]["code"], "reservation_unavailable") << info.dump();
}
