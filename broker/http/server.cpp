#include "broker/http/server.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "broker/http/handler_pool.hpp"
#include "ojs/core/error.hpp"
#include "ojs/core/fibers.hpp"

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

HttpRequest to_request(http::request<http::string_body>& req) {
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
  out.body = std::move(req.body());  // the parser is replaced before the next read
  return out;
}

// Streaming responses in flight: stop() lets them end on their own for a grace
// period (their sources say goodbye), then aborts the rest.
class OpenStreams {
 public:
  std::uint64_t add(std::function<void()> abort) {
    std::lock_guard lock(mutex_);
    aborts_.emplace(++next_, std::move(abort));
    return next_;
  }
  void remove(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    aborts_.erase(id);
    if (aborts_.empty()) drained_.notify_all();
  }
  // Waits up to `grace` for every stream to end, then aborts those left; false if some were.
  bool close_all(std::chrono::milliseconds grace) {
    std::vector<std::function<void()>> left;
    {
      std::unique_lock lock(mutex_);
      if (drained_.wait_for(lock, grace, [this] { return aborts_.empty(); })) return true;
      for (auto& [_, abort] : aborts_) left.push_back(abort);
    }
    for (auto& abort : left) abort();
    std::unique_lock lock(mutex_);
    drained_.wait_for(lock, std::chrono::seconds(1), [this] { return aborts_.empty(); });
    return false;
  }

 private:
  std::mutex mutex_;
  std::condition_variable drained_;
  std::map<std::uint64_t, std::function<void()>> aborts_;
  std::uint64_t next_ = 0;
};

// One open connection as the cap sees it: whether it waits for a request (idle,
// or a request still arriving) and since when, read and written without a lock.
struct Connection {
  std::atomic<std::uint64_t> waiting_since{0};  // an order number (Connections::tick); 0: a request runs, or a stream
  std::function<void()> close;                  // posts the close to the connection's executor
};

// The open connections, for HttpServerOptions::max_connections. One more than
// the cap closes the one that has waited longest for its request (a slow or
// half-sent one first, an idle keep-alive one next); one whose request runs is
// never cut. Only accept and close take the lock.
class Connections {
 public:
  std::uint64_t tick() { return ++clock_; }
  void set_cap(std::size_t cap) { cap_ = std::max<std::size_t>(cap, 1); }
  void add(const std::shared_ptr<Connection>& c) {
    std::shared_ptr<Connection> evict;
    {
      std::lock_guard lock(mutex_);
      open_.insert(c);
      if (open_.size() > cap_) {
        std::uint64_t oldest = std::numeric_limits<std::uint64_t>::max();
        for (const auto& o : open_)
          if (const auto since = o->waiting_since.load(); since != 0 && since < oldest) oldest = since, evict = o;
        if (evict) open_.erase(evict);  // counted out now: its session ends on its own thread
      }
    }
    if (evict) evict->close();
  }
  void remove(const std::shared_ptr<Connection>& c) {
    std::lock_guard lock(mutex_);
    open_.erase(c);
  }

 private:
  std::mutex mutex_;
  std::unordered_set<std::shared_ptr<Connection>> open_;
  std::atomic<std::uint64_t> clock_{0};
  std::size_t cap_ = 4096;
};

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection: plain HTTP, or HTTPS when Stream is TlsStream (handshake first,
// TLS close_notify last). The I/O thread reads; the handler runs on the handler
// pool (its Redis calls block). A slow request holds one pool thread, never an I/O
// thread. Plain HTTP: the pool thread that ran the handler also writes the reply
// (one non-blocking send; the socket's buffer takes a reply whole, nearly always)
// and starts the next read itself, so a request costs one thread handoff, not
// two. Nothing else is pending on the connection meanwhile, which is what makes
// it safe outside the strand. A reply the socket does not take at once, a stream,
// and every TLS reply are written by the I/O thread, as before.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  static constexpr std::size_t kFiberBodyBytes = 64 * 1024;  // a FETCH, an ACK, a job: a few KiB

 public:
  Session(asio::io_context& loop, tcp::socket socket, const Router& router, HandlerPool& handlers, const HttpServerOptions& options,
          OpenStreams& streams, Connections& connections)
    requires(!kTls)
      : loop_(loop), stream_(std::move(socket)), router_(router), handlers_(handlers), options_(options),
        max_body_(options.max_body_bytes), streams_(streams), connections_(connections) {}
  Session(asio::io_context& loop, tcp::socket socket, asio::ssl::context& tls, const Router& router, HandlerPool& handlers,
          const HttpServerOptions& options, OpenStreams& streams, Connections& connections)
    requires kTls
      : loop_(loop), stream_(std::move(socket), tls), router_(router), handlers_(handlers), options_(options),
        max_body_(options.max_body_bytes), streams_(streams), connections_(connections) {}
  ~Session() {
    if (source_ && !stream_done_) {  // the I/O loop was torn down under an open stream
      source_->abandon();
      streams_.remove(stream_id_);
    }
    connections_.remove(connection_);
  }

  void run() {
    connection_->waiting_since = connections_.tick();
    connection_->close = [weak = std::weak_ptr<Session>(this->shared_from_this())] {
      if (auto self = weak.lock()) asio::post(self->stream_.get_executor(), [self] { self->evict(); });
    };
    connections_.add(connection_);
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
  // The next request: idle_timeout for its first byte, header_timeout from there
  // for its header, body_timeout for its body. A slow or half-sent request is
  // closed, whoever sent it (no token is read before the header is whole).
  void read() {
    parser_.emplace();
    parser_->body_limit(max_body_);
    connection_->waiting_since = connections_.tick();
    if (buffer_.size() > 0) return read_header();  // pipelined: its first bytes are here
    beast::get_lowest_layer(stream_).expires_after(options_.idle_timeout);  // idle keep-alive connections are closed
    stream_.async_read_some(buffer_.prepare(4096), [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
      if (ec) return self->close();  // closed by the peer, idle too long, or cut at the cap
      self->buffer_.commit(n);
      self->read_header();
    });
  }

  void read_header() {
    beast::get_lowest_layer(stream_).expires_after(options_.header_timeout);
    http::async_read_header(stream_, buffer_, *parser_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec || self->parser_->is_done()) return self->on_read(ec);
      beast::get_lowest_layer(self->stream_).expires_after(self->options_.body_timeout);
      http::async_read(self->stream_, self->buffer_, *self->parser_,
                       [self](beast::error_code ec, std::size_t) { self->on_read(ec); });
    });
  }

  // Cut at the cap (Connections::add): what is pending ends with an error and the session closes.
  void evict() {
    beast::error_code ec;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ec);
    beast::get_lowest_layer(stream_).cancel();
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
    // The request is in: its read timeouts end here (a GET's header timeout would
    // otherwise run on through a slow handler and the reply's write). The reply's
    // write has its own bound (kStreamWriteTimeout).
    beast::get_lowest_layer(stream_).expires_never();
    connection_->waiting_since = 0;  // its request runs: never cut at the cap
    auto& req = parser_->get();
    const bool keep_alive = req.keep_alive();
    const unsigned version = req.version();
    auto run = [self = this->shared_from_this(), &req, keep_alive, version] {
      HttpResponse response = self->respond(req);
      if constexpr (!kTls) {
        if (!response.stream) return self->write_from_pool(std::move(response), keep_alive, version);
      }
      asio::post(self->stream_.get_executor(), [self, response = std::move(response), keep_alive, version]() mutable {
        self->write(std::move(response), keep_alive, version);
      });
    };
    // Nothing else is pending on the connection while its handler runs, on a fiber
    // of this thread or on the pool: either may write the reply and read on. A big
    // body (a heartbeat listing 100k ids) goes to the pool even on a hot route: its
    // parsing would hold this thread's other connections.
    if (options_.fibers_on_io_threads && req.body().size() <= kFiberBodyBytes &&
        router_.runs_on_io_thread(req.method_string(), req.target()))
      return fibers::start(loop_, std::move(run));
    handlers_.post(std::move(run));
  }

  HttpResponse respond(http::request<http::string_body>& req) {
    // The router renders every handler error; this guard keeps a bug in it (or an
    // allocation failure) from unwinding into the pool or a fiber and killing the broker.
    try {
      auto request = to_request(req);
      request.client_gone = [fd = beast::get_lowest_layer(stream_).socket().native_handle()] {
        // The handler runs while nothing reads the socket: a peek sees the peer's FIN
        // (0) or a reset; pending bytes (a pipelined request) or none mean it is there.
        char c;
        const auto n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
      };
      return router_.dispatch(std::move(request));
    } catch (...) {
      return json_response(500, R"({"error":{"code":"internal_error","message":"internal error","retryable":false}})");
    }
  }

  static std::shared_ptr<http::response<http::string_body>> make_response(HttpResponse response, bool keep_alive, unsigned version) {
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(response.status), version);
    res->set(http::field::server, "ojs-gpu-broker");
    res->set(http::field::content_type, response.content_type);
    res->set("OJS-Version", "1.0");
    for (const auto& [name, value] : response.headers) res->set(name, value);
    res->body() = std::move(response.body);
    res->keep_alive(keep_alive);
    res->prepare_payload();
    return res;
  }

  // Where the handler ran (a pool thread, or a fiber on the I/O thread; plain HTTP):
  // send the reply without blocking, then read the next request. What the socket
  // does not take now is left to the I/O thread (async_write continues the same
  // serializer).
  void write_from_pool(HttpResponse response, bool keep_alive, unsigned version) {
    auto res = make_response(std::move(response), keep_alive, version);
    auto serializer = std::make_shared<http::response_serializer<http::string_body>>(*res);
    const int fd = stream_.socket().native_handle();
    beast::error_code ec;
    while (!ec && !serializer->is_done()) {
      iovec parts[16];
      std::size_t count = 0;
      serializer->next(ec, [&](beast::error_code&, const auto& buffers) {
        for (const auto b : beast::buffers_range_ref(buffers)) {
          if (count == std::size(parts)) break;
          parts[count++] = iovec{const_cast<void*>(b.data()), b.size()};
        }
      });
      if (ec) break;
      msghdr message{};
      message.msg_iov = parts;
      message.msg_iovlen = count;
      const ssize_t sent = ::sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (sent < 0 && errno == EINTR) continue;
      if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;  // full: the I/O thread waits for room
      if (sent < 0) return close();
      serializer->consume(static_cast<std::size_t>(sent));
    }
    if (ec) return close();
    if (serializer->is_done()) {
      if (!keep_alive) return close();
      return read();
    }
    asio::post(stream_.get_executor(), [self = this->shared_from_this(), res, serializer, keep_alive] {
      beast::get_lowest_layer(self->stream_).expires_after(kStreamWriteTimeout);  // a client that stops reading is dropped
      http::async_write(self->stream_, *serializer, [self, res, serializer, keep_alive](beast::error_code ec, std::size_t) {
        if (ec || !keep_alive) return self->close();
        self->read();
      });
    });
  }

  void write(HttpResponse response, bool keep_alive, unsigned version) {
    if (response.stream) return start_stream(std::move(response), version);
    auto res = make_response(std::move(response), keep_alive, version);
    beast::get_lowest_layer(stream_).expires_after(kStreamWriteTimeout);  // a client that stops reading is dropped
    http::async_write(stream_, *res, [self = this->shared_from_this(), res, keep_alive](beast::error_code ec, std::size_t) {
      if (ec || !keep_alive) return self->close();
      self->read();
    });
  }

  // A streaming response: the headers, then one chunk per pull until the source
  // ends it (nullopt), the peer leaves, a write fails or times out, or the server
  // stops. Chunked on HTTP/1.1, close-delimited on 1.0; never kept alive. While
  // the source has nothing to say, nothing runs: the pull callback and a wait on
  // the socket (the peer closing it) are all the connection holds.
  void start_stream(HttpResponse response, unsigned version) {
    source_ = std::move(response.stream);
    chunked_ = version >= 11;
    stream_id_ = streams_.add([weak = std::weak_ptr<Session>(this->shared_from_this())] {
      if (auto self = weak.lock()) asio::post(self->stream_.get_executor(), [self] { self->end_stream(true); });
    });
    auto res = std::make_shared<http::response<http::empty_body>>(static_cast<http::status>(response.status), version);
    res->set(http::field::server, "ojs-gpu-broker");
    res->set(http::field::content_type, response.content_type);
    res->set("OJS-Version", "1.0");
    for (const auto& [name, value] : response.headers) res->set(name, value);
    res->keep_alive(false);
    if (chunked_) res->chunked(true);
    auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    beast::get_lowest_layer(stream_).expires_after(kStreamWriteTimeout);
    http::async_write_header(stream_, *serializer, [self = this->shared_from_this(), res, serializer](beast::error_code ec, std::size_t) {
      if (ec) return self->end_stream(true);
      beast::get_lowest_layer(self->stream_).expires_never();
      self->watch_peer();
      self->pull();
    });
  }

  // A streaming client sends nothing more: readable means it closed (or broke the
  // protocol). The readiness is checked with a non-blocking peek first: the reactor
  // may report the socket readable from the request's own bytes, which were read
  // already (edge-triggered epoll keeps the flag until a read finds nothing), and
  // trusting it closed a healthy stream right after its headers.
  void watch_peer() {
    beast::get_lowest_layer(stream_).socket().async_wait(tcp::socket::wait_read, [self = this->shared_from_this()](beast::error_code ec) {
      if (ec || self->stream_done_) return self->end_stream(true);
      char byte;
      const ssize_t n = ::recv(beast::get_lowest_layer(self->stream_).socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return self->watch_peer();  // not really readable
      self->end_stream(true);
    });
  }

  void pull() {
    source_->pull([self = this->shared_from_this()](std::optional<std::string> chunk) {
      asio::post(self->stream_.get_executor(), [self, chunk = std::move(chunk)]() mutable { self->on_chunk(std::move(chunk)); });
    });
  }

  void on_chunk(std::optional<std::string> chunk) {
    if (stream_done_) return;
    auto self = this->shared_from_this();
    if (chunk && chunk->empty()) return pull();  // an empty chunk would end a chunked body
    if (!chunk && !chunked_) return end_stream(false);
    beast::get_lowest_layer(stream_).expires_after(kStreamWriteTimeout);  // a client that stops reading is dropped
    if (!chunk) {
      return asio::async_write(stream_, http::make_chunk_last(), [self](beast::error_code ec, std::size_t) { self->end_stream(bool(ec)); });
    }
    auto data = std::make_shared<std::string>(std::move(*chunk));
    auto done = [self, data](beast::error_code ec, std::size_t) {
      if (ec) return self->end_stream(true);
      beast::get_lowest_layer(self->stream_).expires_never();
      self->pull();
    };
    if (chunked_) asio::async_write(stream_, http::make_chunk(asio::buffer(*data)), std::move(done));
    else asio::async_write(stream_, asio::buffer(*data), std::move(done));
  }

  void end_stream(bool abandoned) {
    if (stream_done_) return;
    stream_done_ = true;
    if (abandoned) source_->abandon();
    streams_.remove(stream_id_);
    beast::error_code ec;
    beast::get_lowest_layer(stream_).socket().cancel(ec);  // the wait on the peer
    close();
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

  asio::io_context& loop_;  // the one thread this connection is served on (fibers start there)
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const Router& router_;
  HandlerPool& handlers_;
  const HttpServerOptions& options_;
  std::size_t max_body_;
  OpenStreams& streams_;
  Connections& connections_;
  std::shared_ptr<Connection> connection_ = std::make_shared<Connection>();
  // Set while the response is a stream.
  static constexpr auto kStreamWriteTimeout = std::chrono::seconds(30);
  std::shared_ptr<BodySource> source_;
  bool chunked_ = true;
  bool stream_done_ = false;
  std::uint64_t stream_id_ = 0;
};

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  OpenStreams streams;  // outlives the sessions that the io_context may still own
  Connections connections;  // the same
  const Router& router;
  // One io_context per I/O thread, connections dealt round-robin: a request wakes
  // only the thread that owns its connection (threads sharing one io_context woke
  // a second one to take over epoll on every event).
  std::vector<std::unique_ptr<asio::io_context>> iocs;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> keep_running;  // an idle one waits, never returns
  std::size_t next_ioc = 0;
  tcp::acceptor acceptor;
  std::vector<std::thread> threads;
  std::unique_ptr<HandlerPool> handlers;  // runs the request handlers (blocking store calls)
  std::uint16_t bound_port = 0;
  std::optional<asio::ssl::context> tls;  // set when a certificate and key are configured

  Impl(HttpServerOptions o, const Router& r)
      : options(std::move(o)), router(r), iocs(make_contexts(options.threads)), acceptor(*iocs.front()) {
    for (auto& ioc : iocs) keep_running.push_back(asio::make_work_guard(*ioc));
  }

  static std::vector<std::unique_ptr<asio::io_context>> make_contexts(int threads) {
    std::vector<std::unique_ptr<asio::io_context>> out;
    for (int t = 0; t < std::max(1, threads); ++t) out.push_back(std::make_unique<asio::io_context>(1));
    return out;
  }

  void accept() {
    auto& ioc = *iocs[next_ioc++ % iocs.size()];
    acceptor.async_accept(asio::make_strand(ioc), [this, &ioc](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        socket.set_option(tcp::no_delay(true), ec);
        if (tls) std::make_shared<Session<TlsStream>>(ioc, std::move(socket), *tls, router, *handlers, options, streams, connections)->run();
        else std::make_shared<Session<PlainStream>>(ioc, std::move(socket), router, *handlers, options, streams, connections)->run();
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
  // The cap stays under the descriptor limit, leaving room for Redis connections and files.
  std::size_t cap = i.options.max_connections;
  if (rlimit nofile{}; ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    constexpr rlim_t kReserve = 256;
    const std::size_t room = nofile.rlim_cur > 2 * kReserve ? static_cast<std::size_t>(nofile.rlim_cur - kReserve) : nofile.rlim_cur / 2;
    if (cap > room) {
      spdlog::warn("--max-connections {} exceeds what the descriptor limit allows (ulimit -n {}): using {}", cap,
                   static_cast<unsigned long long>(nofile.rlim_cur), room);
      cap = room;
    }
  }
  i.connections.set_cap(cap);
  i.handlers = std::make_unique<HandlerPool>(static_cast<std::size_t>(std::max(1, i.options.handler_threads)));
  i.accept();
  for (auto& ioc : i.iocs) i.threads.emplace_back([&ioc = *ioc] { ioc.run(); });
}

void HttpServer::stop_accepting() {
  auto& i = *impl_;
  if (i.threads.empty()) return;
  asio::post(*i.iocs.front(), [&i] {
    beast::error_code ec;
    i.acceptor.close(ec);
  });
}

void HttpServer::stop() {
  auto& i = *impl_;
  if (i.threads.empty()) return;
  stop_accepting();
  // Open streams end on their own when their sources say goodbye (the broker
  // stops its event hub first); whatever is left after the grace is cut.
  i.streams.close_all(i.options.stream_close_grace);
  for (auto& ioc : i.iocs) ioc->stop();
  for (auto& t : i.threads) t.join();
  i.threads.clear();
  i.handlers->stop();
  i.handlers->join();
}

std::uint16_t HttpServer::port() const { return impl_->bound_port; }

}  // namespace ojs::broker
