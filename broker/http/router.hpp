// Maps "METHOD /path/{param}" patterns to handlers. Errors thrown by handlers
// (OjsError, store outages) are rendered here as OJS error bodies, in one place.
#pragma once
#include <atomic>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/http/message.hpp"
#include "ojs/core/error.hpp"

namespace ojs::broker {

using Handler = std::function<HttpResponse(const HttpRequest&)>;
// Runs before the handler (authentication, rate limits); may throw OjsError.
using Middleware = std::function<void(const HttpRequest&, const std::string& route)>;
// Runs after every request (metrics): method, matched route pattern ("unmatched"
// when none), response status and the seconds dispatch took.
using Observer = std::function<void(const std::string& method, const std::string& route, int status, double seconds)>;
// Runs on every response the router gives, errors and preflights included (CORS headers).
using Decorator = std::function<void(const HttpRequest& request, HttpResponse& response)>;

// What a handler's failure tells the client: an OjsError as it is, the backend gone as
// 503, a JSON access error as 400, anything else as 500 (logged with `context`).
OjsError failure_as_ojs_error(std::exception_ptr failure, const std::string& context);

// Where a route's handler runs. On the handler pool it may block (its Redis calls
// do). On the I/O thread that read the request it runs as a fiber that suspends
// while Redis answers (ojs/core/fibers.hpp): no thread hand-off, for the hot
// worker and producer calls; only a route with a literal path, whose handler
// follows the fibers' rules, may ask for it.
enum class Runs { on_handler_pool, on_io_thread };

class Router {
 public:
  void add(const std::string& method, const std::string& pattern, Handler handler, Runs runs = Runs::on_handler_pool);
  // Whether the request's route runs on the I/O thread (target: path and query, as sent).
  bool runs_on_io_thread(std::string_view method, std::string_view target) const;
  // Routes ("METHOD /pattern", each registered before) whose cost grows with the data
  // (diagnoses, estimates, logs, listings): at most `share` of them run at once; beyond,
  // 503 with Retry-After, so the rest of the handler threads stay free for health,
  // readiness and the work itself.
  void bound_share(const std::vector<std::string>& routes, int share);
  void use(Middleware middleware) { middlewares_.push_back(std::move(middleware)); }
  void observe(Observer observer) { observers_.push_back(std::move(observer)); }
  void decorate(Decorator decorator) { decorators_.push_back(std::move(decorator)); }
  HttpResponse dispatch(HttpRequest request) const;
  // Requests being dispatched now (a stream counts until its handler returned):
  // the shutdown waits for none to be left.
  int in_flight() const { return in_flight_; }

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    std::size_t params;  // how many segments are {parameters}
    Handler handler;
    bool bounded = false;  // counted against the bounded share
  };
  std::vector<Route> routes_;
  std::vector<std::pair<std::string, std::string>> io_thread_routes_;  // method, literal path
  std::vector<Middleware> middlewares_;
  std::vector<Observer> observers_;
  std::vector<Decorator> decorators_;
  mutable std::atomic<int> in_flight_{0};
  int share_ = 0;
  mutable std::atomic<int> share_in_flight_{0};

  HttpResponse resolve(HttpRequest& request, std::string& matched) const;
};

HttpResponse json_response(int status, const std::string& json_body);

// ojs-http-binding.md §6.5: the client's X-Request-Id when it is a plain token of at
// most 128 printable characters, else a new "req_<UUIDv7>".
std::string request_id_for(const HttpRequest& request);

}  // namespace ojs::broker
