// The HTTP listener's connection handling (broker/http/server.cpp): the pool
// thread that ran a handler writes its reply when the socket takes it at once and
// reads the next request itself; a reply the socket does not take is finished by
// the I/O thread. Both ways keep replies whole, in order, and the connection
// usable. Real broker, real redis-server, raw sockets over loopback.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>

#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// One keep-alive connection spoken to byte by byte. Every wait is bounded.
class RawConnection {
 public:
  // receive_buffer > 0: a small socket receive buffer, so that a big reply cannot be sent at once.
  RawConnection(std::uint16_t port, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawConnection() { ::close(fd_); }
  bool connected() const { return connected_; }

  bool send_all(const std::string& bytes) {
    for (std::size_t sent = 0; sent < bytes.size();) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  struct Response {
    int status = 0;
    std::string head;
    std::string body;
  };
  // The next response (Content-Length framed, as the broker sends them); nullopt on close or timeout.
  std::optional<Response> read_response() {
    std::size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return std::nullopt;
    Response r;
    r.head = buffer_.substr(0, end);
    r.status = std::stoi(r.head.substr(9, 3));
    std::size_t length = 0;
    for (std::size_t at = 0; (at = r.head.find("\r\n", at)) != std::string::npos;) {
      at += 2;
      std::string line = r.head.substr(at, r.head.find("\r\n", at) - at);
      for (auto& c : line) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (line.rfind("content-length:", 0) == 0) length = std::stoul(line.substr(15));
    }
    while (buffer_.size() < end + 4 + length)
      if (!fill()) return std::nullopt;
    r.body = buffer_.substr(end + 4, length);
    buffer_.erase(0, end + 4 + length);
    return r;
  }

  // True when the peer closed the connection (EOF within the bound) with nothing more to read.
  bool closed_by_peer() { return buffer_.empty() && !fill(); }

 private:
  bool fill() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 30000) <= 0) return false;
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

std::string get_request(const std::string& path, bool close = false) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n";
}

json small_job(const std::string& queue) { return {{"type", "http.task"}, {"args", json::array()}, {"options", {{"queue", queue}}}}; }

}  // namespace

// Requests sent back to back in one write (pipelined) are read from the buffer
// the previous read left, by whichever thread reads next: every one is answered,
// in order, and `Connection: close` on the last closes the connection after its reply.
TEST(HttpServer, PipelinedRequestsAreAnsweredInOrderOnOneConnection) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(api.push(small_job("pipelined")));

  RawConnection conn(broker.port());
  ASSERT_TRUE(conn.connected());
  std::string burst;
  for (std::size_t i = 0; i < ids.size(); ++i) burst += get_request("/ojs/v1/jobs/" + ids[i], i + 1 == ids.size());
  ASSERT_TRUE(conn.send_all(burst));
  for (const auto& id : ids) {
    const auto r = conn.read_response();
    ASSERT_TRUE(r.has_value()) << "no reply for job " << id;
    EXPECT_EQ(r->status, 200);
    const auto body = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << r->body;
    EXPECT_EQ(body["job"]["id"], id);
  }
  EXPECT_TRUE(conn.closed_by_peer());
}

// A reply larger than the client lets the socket take (small receive buffer, the
// client not reading yet) cannot be sent at once: the I/O thread finishes it
// while the client reads slowly. Meanwhile other connections are served; the
// slow client gets the reply whole, and its connection stays usable after it.
TEST(HttpServer, ASlowReaderGetsABigReplyWholeWhileOthersAreServed) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--max-body-bytes", "33554432"}};
  Api api{broker.url()};
  const std::string big(8 * 1024 * 1024, 'x');
  const auto id = api.push({{"type", "http.task"}, {"args", json::array({big})}, {"options", {{"queue", "big"}}}});

  RawConnection slow(broker.port(), 4096);
  ASSERT_TRUE(slow.connected());
  ASSERT_TRUE(slow.send_all(get_request("/ojs/v1/jobs/" + id)));

  // While the big reply waits on the slow reader, other clients are answered.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(api.get("/ojs/v1/health").status, 200);
  const auto other = api.push(small_job("big"));
  EXPECT_EQ(api.get("/ojs/v1/jobs/" + other).status, 200);

  const auto r = slow.read_response();
  ASSERT_TRUE(r.has_value()) << "the big reply never arrived whole";
  EXPECT_EQ(r->status, 200);
  const auto body = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << "reply of " << r->body.size() << " bytes is not JSON";
  EXPECT_EQ(body["job"]["id"], id);
  ASSERT_TRUE(body["job"]["args"].is_array());
  EXPECT_EQ(body["job"]["args"][0].get<std::string>().size(), big.size());

  // Keep-alive after the I/O thread finished the write: the next request is read and answered.
  ASSERT_TRUE(slow.send_all(get_request("/ojs/v1/jobs/" + other)));
  const auto next = slow.read_response();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(json::parse(next->body)["job"]["id"], other);
}
