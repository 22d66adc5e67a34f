// A reply read slowly is written whole: the request's read timeouts end when the
// request is in, so a GET's header timeout never cuts the reply it answers with.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/processes.hpp"
#include "support/raw_socket.hpp"

using nlohmann::json;
using namespace ojs::test;

TEST(SlowReaderReply, ABigReplyReadSlowerThanTheHeaderTimeoutArrivesWhole) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--http-header-timeout-ms", "300", "--max-body-bytes", std::to_string(32 << 20)}};
  Api api{broker.url()};
  const std::string big(12 << 20, 'a');
  const auto id = api.push({{"type", "t"}, {"args", json::array({big})}, {"options", {{"queue", "slow-read"}}}});

  const int fd = connect_loopback(broker.port(), 64 * 1024);  // the kernel takes little of the reply
  ASSERT_GE(fd, 0);
  const std::string request = "GET /ojs/v1/jobs/" + id + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  // Read about 1 MiB a second, well past the 300 ms header timeout in all.
  std::string reply;
  char buf[64 * 1024];
  for (;;) {
    std::size_t this_round = 0;
    while (this_round < (1u << 20)) {
      const auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) goto done;
      reply.append(buf, static_cast<std::size_t>(n));
      this_round += static_cast<std::size_t>(n);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
  }
done:
  ::close(fd);
  const auto head_end = reply.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << reply.substr(0, 200);
  EXPECT_EQ(reply.substr(0, 12), "HTTP/1.1 200");
  const auto body = json::parse(reply.substr(head_end + 4), nullptr, false);
  ASSERT_FALSE(body.is_discarded()) << "the reply was cut at " << reply.size() << " bytes";
  EXPECT_EQ(body["job"]["args"][0].get<std::string>().size(), big.size());
}
