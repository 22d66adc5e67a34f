// The HTTP/1.1 listener (Boost.Beast over Asio), plain or TLS. Beast stays inside server.cpp;
// everything else speaks HttpRequest/HttpResponse.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "broker/http/router.hpp"

namespace ojs::broker {

struct HttpServerOptions {
  std::string address = "127.0.0.1";
  std::uint16_t port = 8080;     // 0 picks a free port (see HttpServer::port())
  int threads = 4;               // I/O threads: accept, read, write
  int handler_threads = 16;      // request handlers (they block on Redis), apart from the I/O threads
  // Routes added with Runs::on_io_thread run as fibers on the I/O thread that read
  // them (router.hpp); false sends every request to the handler pool.
  bool fibers_on_io_threads = true;
  std::size_t max_body_bytes = 4 * 1024 * 1024;
  std::string tls_cert, tls_key;  // PEM files; both set: HTTPS (TLS 1.2+) instead of HTTP
  std::chrono::milliseconds stream_close_grace{2000};  // stop(): streaming responses left to end, then cut
  // Against slow or idle clients (docs/operations.md "Security"): a request's
  // header must arrive within header_timeout of its first byte and its body
  // within body_timeout after; a connection waits idle_timeout for the next
  // request. At most max_connections are open: one more closes the oldest that
  // is waiting for (or still receiving) a request, never one whose request runs.
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds body_timeout{60000};
  std::chrono::milliseconds idle_timeout{60000};
  std::size_t max_connections = 4096;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, const Router& router);
  ~HttpServer();
  void start();              // binds and starts the I/O threads; throws on bind failure
  void stop_accepting();     // closes the listener; connections already open are served on
  void stop();               // stops accepting, ends open streams (see stream_close_grace), joins the threads
  std::uint16_t port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ojs::broker
