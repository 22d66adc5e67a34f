#include "broker/http/drain_gate.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <string_view>

#include "ojs/core/error.hpp"

namespace ojs::broker {

namespace {
// The routes that start new work; everything else (finishing work, reads) goes on.
constexpr std::array<std::string_view, 4> kNewWork = {"POST /ojs/v1/jobs", "POST /ojs/v1/jobs/batch", "POST /ojs/v1/workflows",
                                                      "POST /ojs/v1/workers/fetch"};
}  // namespace

void DrainGate::check(const HttpRequest&, const std::string& route) const {
  if (!draining()) return;
  for (auto r : kNewWork)
    if (route == r)
      throw OjsError(ErrorCode::unavailable, "this broker is draining (shutting down) and takes no new work; retry on another broker",
                     {{"reason", "draining"}, {"retry_after_s", 5}});
}

}  // namespace ojs::broker
