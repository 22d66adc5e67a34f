#include "broker/http/server.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <thread>
#include <vector>

#include "ojs/core/error.hpp"

namespace ojs::broker {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string percent_decode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && i + 2 < in.size() && std::isxdigit(static_cast<unsigned char>(in[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(in[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else if (in[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(in[i]);
    }
  }
  return out;
}

HttpRequest to_request(const http::request<http::string_body>& req) {
  HttpRequest out;
  out.method = std::string(req.method_string());
  const std::string_view target = req.target();
  const auto q = target.find('?');
  out.path = percent_decode(target.substr(0, q));
  if (q != std::string_view::npos) {
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
      const auto amp = rest.find('&');
      const auto pair = rest.substr(0, amp);
      const auto eq = pair.find('=');
      out.query[percent_decode(pair.substr(0, eq))] = eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1));
      if (amp == std::string_view::npos) break;
      rest = rest.substr(amp + 1);
    }
  }
  for (const auto& field : req) {
    std::string name(field.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.headers[name] = std::string(field.value());
  }
  out.body = req.body();
  return out;
}

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection: plain HTTP, or HTTPS when Stream is TlsStream (handshake first,
// TLS close_notify last). Requests are dispatched synchronously on the I/O thread.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  Session(tcp::socket socket, const Router& router, std::size_t max_body)
    requires(!kTls)
      : stream_(std::move(socket)), router_(router), max_body_(max_body) {}
  Session(tcp::socket socket, asio::ssl::context& tls, const Router& router, std::size_t max_body)
    requires kTls
      : stream_(std::move(socket), tls), router_(router), max_body_(max_body) {}

  void run() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        beast::get_lowest_layer(self->stream_).expires_after(std::chrono::seconds(30));
        self->stream_.async_handshake(asio::ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) return self->close();
          self->read();
        });
      } else {
        self->read();
      }
    });
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(max_body_);
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(120));  // idle keep-alive connections are closed
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::connection_reset ||
        ec == asio::ssl::error::stream_truncated)
      return close();
    if (ec == http::error::body_limit) {
      HttpResponse r = json_response(413, OjsError(ErrorCode::payload_too_large,
                                                   "request body exceeds " + std::to_string(max_body_) + " bytes",
                                                   {{"field", "body"}, {"rule", "max " + std::to_string(max_body_) + " bytes"}})
                                              .to_json()
                                              .dump());
      return write(std::move(r), false, 11);
    }
    if (ec) return close();
    auto& req = parser_->get();
    const bool keep_alive = req.keep_alive();
    const unsigned version = req.version();
    // The router renders every handler error; this guard keeps a bug in it (or an
    // allocation failure) from unwinding into the io_context and killing the broker.
    HttpResponse response;
    try {
      response = router_.dispatch(to_request(req));
    } catch (...) {
      response = json_response(500, R"({"error":{"code":"internal_error","message":"internal error","retryable":false}})");
    }
    write(std::move(response), keep_alive, version);
  }

  void write(HttpResponse response, bool keep_alive, unsigned version) {
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(response.status), version);
    res->set(http::field::server, "ojs-gpu-broker");
    res->set(http::field::content_type, response.content_type);
    res->set("OJS-Version", "1.0");
    for (const auto& [name, value] : response.headers) res->set(name, value);
    res->body() = std::move(response.body);
    res->keep_alive(keep_alive);
    res->prepare_payload();
    http::async_write(stream_, *res, [self = this->shared_from_this(), res, keep_alive](beast::error_code ec, std::size_t) {
      if (ec || !keep_alive) return self->close();
      self->read();
    });
  }

  void close() {
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {
        beast::error_code ec;
        beast::get_lowest_layer(self->stream_).socket().close(ec);
      });
    } else {
      beast::error_code ec;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    }
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const Router& router_;
  std::size_t max_body_;
};

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  const Router& router;
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;
  std::uint16_t bound_port = 0;
  std::optional<asio::ssl::context> tls;  // set when a certificate and key are configured

  Impl(HttpServerOptions o, const Router& r) : options(std::move(o)), router(r), ioc(o.threads) {}

  void accept() {
    acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        socket.set_option(tcp::no_delay(true), ec);
        if (tls) std::make_shared<Session<TlsStream>>(std::move(socket), *tls, router, options.max_body_bytes)->run();
        else std::make_shared<Session<PlainStream>>(std::move(socket), router, options.max_body_bytes)->run();
      }
      accept();
    });
  }
};

HttpServer::HttpServer(HttpServerOptions options, const Router& router)
    : impl_(std::make_unique<Impl>(std::move(options), router)) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  auto& i = *impl_;
  if (i.options.tls_cert.empty() != i.options.tls_key.empty())
    throw std::runtime_error("TLS needs both a certificate (--tls-cert) and a key (--tls-key)");
  if (!i.options.tls_cert.empty()) {
    i.tls.emplace(asio::ssl::context::tls_server);
    i.tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                       asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    i.tls->use_certificate_chain_file(i.options.tls_cert);  // throws boost::system::system_error on a bad file
    i.tls->use_private_key_file(i.options.tls_key, asio::ssl::context::pem);
  }
  const tcp::endpoint endpoint(asio::ip::make_address(i.options.address), i.options.port);
  i.acceptor.open(endpoint.protocol());
  i.acceptor.set_option(asio::socket_base::reuse_address(true));
  i.acceptor.bind(endpoint);
  i.acceptor.listen(asio::socket_base::max_listen_connections);
  i.bound_port = i.acceptor.local_endpoint().port();
  i.accept();
  for (int t = 0; t < std::max(1, i.options.threads); ++t) i.threads.emplace_back([&i] { i.ioc.run(); });
}

void HttpServer::stop() {
  auto& i = *impl_;
  if (i.threads.empty()) return;
  asio::post(i.ioc, [&i] {
    beast::error_code ec;
    i.acceptor.close(ec);
  });
  i.ioc.stop();
  for (auto& t : i.threads) t.join();
  i.threads.clear();
}

std::uint16_t HttpServer::port() const { return impl_->bound_port; }

}  // namespace ojs::broker
