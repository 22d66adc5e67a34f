// A PUSH waiting for room in a full `block` queue whose client goes away stops
// waiting and stores nothing: the client's retry is then the only copy.
#include <gtest/gtest.h>

#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"
#include "support/raw_socket.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// Sends one request on a fresh connection and leaves it open: the socket.
int send_request(std::uint16_t port, const std::string& request) {
  const int fd = connect_loopback(port);
  if (fd < 0 || ::send(fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) return -1;
  return fd;
}

}  // namespace

TEST(BlockedPush, AClientThatLeavesWhileItsPushWaitsGetsNothingStored) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  const auto in_flight = [&] { return api.get("/ojs/v1/admin/drain").body.value("in_flight", 0); };
  ASSERT_EQ(api.call("PUT", "/ojs/v1/admin/queues/bp-gone/config", {{"backpressure", {{"max_depth", 1}, {"strategy", "block"}}}}).status, 200);
  const auto first = api.push(job_in("bp-gone"));

  const auto body = job_in("bp-gone").dump();
  const int fd = send_request(broker.port(), "POST /ojs/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                             "OJS-Block-Timeout: 60\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(wait_until([&] { return in_flight() >= 2; })) << "the PUSH never waited";
  ::close(fd);
  // The waiting PUSH notices and ends long before its 60 s.
  EXPECT_TRUE(wait_until([&] { return in_flight() == 1; }, 20)) << "the PUSH still waits for a client that left";

  // Room now: nothing of the gone client's is stored.
  const auto got = api.fetch({"bp-gone"}, "w1");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["id"], first);
  const auto stats = api.get("/ojs/v1/queues/bp-gone/stats");
  EXPECT_EQ(stats.body["stats"]["available"], 0) << stats.body.dump();
}
