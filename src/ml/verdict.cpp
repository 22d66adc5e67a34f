#include "ojs/ml/verdict.hpp"

#include <array>

namespace ojs::ml {
namespace {

constexpr std::array<std::string_view, 5> kNames{"ok", "wait", "unresolvable", "preemptible", "held"};

// How hopeful a worker's verdict is for the job, most hopeful first.
int hope(VerdictCode c) {
  switch (c) {
    case VerdictCode::ok: return 0;
    case VerdictCode::held: return 1;
    case VerdictCode::preemptible: return 2;
    case VerdictCode::wait: return 3;
    case VerdictCode::unresolvable: return 4;
  }
  return 4;
}

}  // namespace

std::string_view to_string(VerdictCode code) { return kNames[static_cast<std::size_t>(code)]; }

std::optional<VerdictCode> parse_verdict_code(std::string_view text) {
  for (std::size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == text) return static_cast<VerdictCode>(i);
  return std::nullopt;
}

VerdictCode worker_code(VerdictCode a, VerdictCode b) {
  if (a == VerdictCode::ok) return b;  // any refusal outweighs no refusal
  if (b == VerdictCode::ok) return a;
  if (a == VerdictCode::unresolvable || b == VerdictCode::unresolvable) return VerdictCode::unresolvable;
  return hope(a) <= hope(b) ? a : b;  // the most specific explanation of the wait: held, preemptible, wait
}

VerdictCode fleet_code(VerdictCode a, VerdictCode b) { return hope(a) <= hope(b) ? a : b; }

}  // namespace ojs::ml
