// CORS for browser dashboards on other origins (ojs-http-binding.md §20): an
// allow-list of exact origins (--cors-origin, repeatable), never "*". A response to
// a listed origin carries Access-Control-Allow-Origin (the origin itself) and the
// exposed headers; a preflight (OPTIONS) also the methods, headers and max age. An
// origin not listed gets no Access-Control-* header, so the browser refuses.
#pragma once
#include <string>
#include <vector>

#include "broker/http/message.hpp"

namespace ojs::broker {

class CorsPolicy {
 public:
  explicit CorsPolicy(std::vector<std::string> origins);
  bool enabled() const { return !origins_.empty(); }
  bool allows(const std::string& origin) const;
  void decorate(const HttpRequest& request, HttpResponse& response) const;  // a Router decorator

 private:
  std::vector<std::string> origins_;
};

// An origin as a browser sends it: scheme "://" host [":" port], nothing after.
bool is_valid_origin(const std::string& origin);

}  // namespace ojs::broker
