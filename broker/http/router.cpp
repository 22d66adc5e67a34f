#include "broker/http/router.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string_view>

#include "ojs/core/error.hpp"
#include "ojs/core/uuid.hpp"

namespace ojs::broker {

namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto slash = path.find('/', start);
    const auto end = slash == std::string::npos ? path.size() : slash;
    if (end > start) out.push_back(path.substr(start, end - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

// Messages echo paths and ids the client sent: invalid UTF-8 is replaced, never thrown.
HttpResponse error_response(const OjsError& e) {
  HttpResponse r = json_response(http_status(e.code()), e.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  const auto& d = e.details();
  if (e.code() == ErrorCode::unavailable || e.code() == ErrorCode::rate_limited || e.code() == ErrorCode::queue_full) {
    // a rate limiter knows how long to wait
    const bool known = d.is_object() && d.contains("retry_after_s") && d["retry_after_s"].is_number_integer();
    r.headers.emplace_back("Retry-After", known ? std::to_string(d["retry_after_s"].get<long long>()) : "1");
  }
  if (e.code() == ErrorCode::queue_full && d.is_object() && d.contains("depth") && d.contains("bound")) {  // ojs-backpressure.md §7.2
    r.headers.emplace_back("X-OJS-Queue-Depth", d["depth"].dump());
    r.headers.emplace_back("X-OJS-Queue-Bound", d["bound"].dump());
  }
  return r;
}

// RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF.
bool is_valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if (c == 0xE0) { n = 2; lo = 0xA0; }
    else if (c == 0xED) { n = 2; hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) n = 2;
    else if (c == 0xF0) { n = 3; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) n = 3;
    else if (c == 0xF4) { n = 3; hi = 0x8F; }
    else return false;
    if (i + n >= s.size()) return false;  // truncated sequence
    for (std::size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return false;
    }
    i += n + 1;
  }
  return true;
}

bool request_is_utf8(const HttpRequest& request) {
  if (!is_valid_utf8(request.path)) return false;
  for (const auto& [k, v] : request.query)
    if (!is_valid_utf8(k) || !is_valid_utf8(v)) return false;
  return true;
}

}  // namespace

HttpResponse json_response(int status, const std::string& json_body) {
  HttpResponse r;
  r.status = status;
  r.body = json_body;
  return r;
}

void Router::add(const std::string& method, const std::string& pattern, Handler handler, Runs runs) {
  auto segments = split_path(pattern);
  if (runs == Runs::on_io_thread) {
    if (pattern.find('{') != std::string::npos) throw std::logic_error("a route with parameters runs on the handler pool: " + pattern);
    io_thread_routes_.emplace_back(method, pattern);
  }
  const auto params = std::count_if(segments.begin(), segments.end(), [](const std::string& s) { return s.size() > 2 && s.front() == '{'; });
  // Literal segments win over parameters (POST /jobs/batch is not the job "batch"):
  // routes stay sorted by parameter count, registration order within a count.
  const auto at = std::find_if(routes_.begin(), routes_.end(), [&](const Route& r) { return r.params > static_cast<std::size_t>(params); });
  routes_.insert(at, Route{method, pattern, std::move(segments), static_cast<std::size_t>(params), std::move(handler)});
}

void Router::bound_share(const std::vector<std::string>& routes, int share) {
  share_ = std::max(1, share);
  for (const auto& name : routes) {
    const auto it = std::find_if(routes_.begin(), routes_.end(), [&](const Route& r) { return r.method + " " + r.pattern == name; });
    if (it == routes_.end()) throw std::logic_error("bound_share: no such route: " + name);
    it->bounded = true;
  }
}

bool Router::runs_on_io_thread(std::string_view method, std::string_view target) const {
  const auto path = target.substr(0, target.find('?'));
  return std::any_of(io_thread_routes_.begin(), io_thread_routes_.end(),
                     [&](const auto& route) { return route.first == method && route.second == path; });
}

std::string request_id_for(const HttpRequest& request) {
  const auto sent = request.header("x-request-id");
  const bool usable = !sent.empty() && sent.size() <= 128 &&
                      std::all_of(sent.begin(), sent.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  return usable ? sent : "req_" + make_uuidv7();
}

OjsError failure_as_ojs_error(std::exception_ptr failure, const std::string& context) {
  try {
    std::rethrow_exception(failure);
  } catch (const OjsError& e) {
    return e;
  } catch (const BackendUnavailable& e) {  // the store's StoreUnavailable
    spdlog::warn("{}: backend unavailable: {}", context, e.what());
    return OjsError(ErrorCode::unavailable, std::string("backend unavailable: ") + e.what());
  } catch (const nlohmann::json::exception& e) {
    return OjsError(ErrorCode::invalid_request, std::string("malformed request: ") + e.what());
  } catch (const std::exception& e) {
    spdlog::error("{}: internal error: {}", context, e.what());
    return OjsError(ErrorCode::internal_error, std::string("internal error: ") + e.what());
  } catch (...) {
    spdlog::error("{}: internal error: unknown exception", context);
    return OjsError(ErrorCode::internal_error, "internal error");
  }
}

HttpResponse Router::dispatch(HttpRequest request) const {
  struct Counted {
    std::atomic<int>& n;
    explicit Counted(std::atomic<int>& c) : n(c) { ++n; }
    ~Counted() { --n; }
  } counted(in_flight_);
  const auto begin = std::chrono::steady_clock::now();
  std::string matched = "unmatched";
  HttpResponse response = resolve(request, matched);
  response.headers.emplace_back("X-Request-Id", request_id_for(request));
  for (const auto& d : decorators_) d(request, response);
  if (observers_.empty()) return response;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  for (const auto& o : observers_) o(request.method, matched, response.status, seconds);
  return response;
}

HttpResponse Router::resolve(HttpRequest& request, std::string& matched) const {
  // Ids and names come from the path: refused here, before any handler stores or echoes them.
  if (!request_is_utf8(request))
    return error_response(OjsError(ErrorCode::invalid_request, "the request path or query is not valid UTF-8",
                                   {{"field", "path"}, {"rule", "must be valid UTF-8 after percent-decoding"}}));
  const auto segments = split_path(request.path);
  bool path_matched = false;
  std::size_t matched_params = 0;
  std::string allowed;  // methods of the routes whose path matched: the 405's Allow header
  for (const auto& route : routes_) {
    if (route.segments.size() != segments.size()) continue;
    if (path_matched && route.params > matched_params) break;  // a more literal route owns this path
    std::map<std::string, std::string> params;
    bool match = true;
    for (std::size_t i = 0; i < segments.size() && match; ++i) {
      const auto& want = route.segments[i];
      if (want.size() > 2 && want.front() == '{' && want.back() == '}') params[want.substr(1, want.size() - 2)] = segments[i];
      else match = want == segments[i];
    }
    if (!match) continue;
    path_matched = true;
    matched_params = route.params;
    if (route.method != request.method) {
      if ((", " + allowed + ",").find(", " + route.method + ",") == std::string::npos)
        allowed += (allowed.empty() ? "" : ", ") + route.method;
      continue;
    }
    matched = route.pattern;
    request.params = std::move(params);
    try {
      for (const auto& m : middlewares_) m(request, route.method + " " + route.pattern);
      if (!route.bounded) return route.handler(request);
      struct Slot {
        std::atomic<int>& n;
        ~Slot() { --n; }
      } slot{share_in_flight_};
      if (++share_in_flight_ > share_)
        throw OjsError(ErrorCode::unavailable,
                       "too many expensive reads (diagnoses, estimates, logs, listings) in flight on this broker (" +
                           std::to_string(share_) + "): retry later",
                       {{"reason", "busy"}, {"limit", share_}, {"retry_after_s", 1}});
      return route.handler(request);
    } catch (...) {  // nothing may reach the I/O thread
      return error_response(failure_as_ojs_error(std::current_exception(), request.method + " " + request.path));
    }
  }
  if (!allowed.empty() && request.method == "OPTIONS") {  // a CORS preflight, or a client asking what it may do
    HttpResponse r = json_response(204, "");
    r.headers.emplace_back("Allow", allowed + ", OPTIONS");
    return r;
  }
  if (!allowed.empty()) {
    HttpResponse r = error_response(OjsError(ErrorCode::method_not_allowed,
                                             "method " + request.method + " is not allowed on " + request.path,
                                             {{"method", request.method}, {"allowed", allowed}}));
    r.headers.emplace_back("Allow", allowed);
    return r;
  }
  return error_response(OjsError(ErrorCode::not_found, "no such endpoint: " + request.method + " " + request.path));
}

}  // namespace ojs::broker
