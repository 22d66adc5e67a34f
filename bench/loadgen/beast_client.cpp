#include "loadgen/beast_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <cerrno>
#include <stdexcept>

#include <poll.h>

namespace ojs::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// The socket as a Beast SyncReadStream/SyncWriteStream whose reads give up after a
// timeout: asio's blocking reads have no deadline (and SO_RCVTIMEO only makes asio
// poll forever), so each read first waits in poll() for at most `timeout_ms`.
class TimedSocket {
 public:
  TimedSocket(asio::io_context& io, int timeout_ms) : socket_(io), timeout_ms_(timeout_ms) {}
  tcp::socket& socket() { return socket_; }

  template <class Buffers>
  std::size_t read_some(const Buffers& buffers, beast::error_code& ec) {
    pollfd p{socket_.native_handle(), POLLIN, 0};
    int n;
    do n = ::poll(&p, 1, timeout_ms_);
    while (n < 0 && errno == EINTR);
    if (n == 0) {
      ec = asio::error::timed_out;
      return 0;
    }
    if (n < 0) {
      ec.assign(errno, boost::system::system_category());
      return 0;
    }
    return socket_.read_some(buffers, ec);
  }
  template <class Buffers>
  std::size_t read_some(const Buffers& buffers) {
    beast::error_code ec;
    const auto n = read_some(buffers, ec);
    if (ec) throw beast::system_error(ec);
    return n;
  }
  template <class Buffers>
  std::size_t write_some(const Buffers& buffers, beast::error_code& ec) { return socket_.write_some(buffers, ec); }
  template <class Buffers>
  std::size_t write_some(const Buffers& buffers) { return socket_.write_some(buffers); }

 private:
  tcp::socket socket_;
  int timeout_ms_;
};

}  // namespace

struct BeastClient::Impl {
  std::string host, port, prefix;
  asio::io_context io;
  TimedSocket stream;
  beast::flat_buffer buffer;
  http::request<http::string_body> request;
  bool connected = false;

  Impl(std::string authority, std::string h, std::string p, std::string pre, int timeout_ms)
      : host(std::move(h)), port(std::move(p)), prefix(std::move(pre)), stream(io, timeout_ms) {
    request.method(http::verb::post);
    request.version(11);
    request.set(http::field::host, authority);
    request.set(http::field::content_type, "application/openjobspec+json");
    request.keep_alive(true);
  }

  void close() {
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.socket().close(ignored);
    buffer.clear();
    connected = false;
  }

  bool connect(beast::error_code& ec) {
    tcp::resolver resolver(io);
    const auto endpoints = resolver.resolve(host, port, ec);
    if (ec) return false;
    asio::connect(stream.socket(), endpoints, ec);
    if (ec) return false;
    stream.socket().set_option(tcp::no_delay(true), ec);  // as curl: a request leaves at once
    connected = !ec;
    return connected;
  }

  // One exchange on the open connection (opened first if needed). `closed_unanswered`:
  // the server had closed the connection before any byte of an answer (then the
  // request was not taken and may be sent again).
  HttpResponse exchange(bool& closed_unanswered) {
    HttpResponse out;
    beast::error_code ec;
    closed_unanswered = false;
    if (!connected && !connect(ec)) {
      close();
      out.transport_error = "connect to " + host + ":" + port + ": " + ec.message();
      return out;
    }
    http::write(stream, request, ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    if (!ec) http::read(stream, buffer, parser, ec);
    if (ec) {
      closed_unanswered = !parser.got_some() && (ec == http::error::end_of_stream || ec == asio::error::eof ||
                                                 ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
      close();
      out.transport_error = ec.message();
      return out;
    }
    auto& response = parser.get();
    out.status = response.result_int();
    out.body = std::move(response.body());
    if (!response.keep_alive()) close();
    return out;
  }
};

BeastClient::BeastClient(const std::string& base_url, std::chrono::milliseconds timeout) {
  const std::string scheme = "http://";
  if (base_url.rfind(scheme, 0) != 0)
    throw std::invalid_argument("loadgen: the hot-path client speaks plain http:// only, not " + base_url);
  const auto authority_end = base_url.find('/', scheme.size());
  const std::string authority = base_url.substr(scheme.size(), authority_end - scheme.size());
  std::string prefix = authority_end == std::string::npos ? "" : base_url.substr(authority_end);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  const auto colon = authority.rfind(':');
  const bool has_port = colon != std::string::npos && authority.find(']', colon) == std::string::npos;
  std::string host = has_port ? authority.substr(0, colon) : authority;
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) throw std::invalid_argument("loadgen: no host in " + base_url);
  impl_ = std::make_unique<Impl>(authority, host, has_port ? authority.substr(colon + 1) : "80", prefix, static_cast<int>(timeout.count()));
}

BeastClient::~BeastClient() = default;

HttpResponse BeastClient::post(const std::string& path, const std::string& body) {
  auto& c = *impl_;
  c.request.target(c.prefix + path);
  c.request.body() = body;
  c.request.prepare_payload();
  const bool reused = c.connected;
  bool closed_unanswered = false;
  auto out = c.exchange(closed_unanswered);
  // The kept-alive connection was closed under us (the server's idle timeout) before
  // any answer: the request was not taken; send it once more on a new connection.
  if (reused && closed_unanswered) out = c.exchange(closed_unanswered);
  return out;
}

}  // namespace ojs::bench
