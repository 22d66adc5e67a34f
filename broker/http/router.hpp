// Maps "METHOD /path/{param}" patterns to handlers. Errors thrown by handlers
// (OjsError, store outages) are rendered here as OJS error bodies, in one place.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "broker/http/message.hpp"

namespace ojs::broker {

using Handler = std::function<HttpResponse(const HttpRequest&)>;
// Runs before the handler (authentication, rate limits); may throw OjsError.
using Middleware = std::function<void(const HttpRequest&, const std::string& route)>;
// Runs after every request (metrics): method, matched route pattern ("unmatched"
// when none), response status and the seconds dispatch took.
using Observer = std::function<void(const std::string& method, const std::string& route, int status, double seconds)>;

class Router {
 public:
  void add(const std::string& method, const std::string& pattern, Handler handler);
  void use(Middleware middleware) { middlewares_.push_back(std::move(middleware)); }
  void observe(Observer observer) { observers_.push_back(std::move(observer)); }
  HttpResponse dispatch(HttpRequest request) const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    std::size_t params;  // how many segments are {parameters}
    Handler handler;
  };
  std::vector<Route> routes_;
  std::vector<Middleware> middlewares_;
  std::vector<Observer> observers_;

  HttpResponse resolve(HttpRequest request, std::string& matched) const;
};

HttpResponse json_response(int status, const std::string& json_body);

}  // namespace ojs::broker
