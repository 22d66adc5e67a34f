// Wall-clock helpers: every timestamp the broker stores is integer milliseconds
// since the Unix epoch; RFC 3339 strings exist only at the HTTP edge.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ojs {

std::int64_t now_ms();

// "2026-11-22T10:00:00.123Z" (always UTC, millisecond precision).
std::string format_rfc3339(std::int64_t epoch_ms);

// Accepts RFC 3339 with 'Z' or a numeric offset and optional fractional seconds.
std::optional<std::int64_t> parse_rfc3339(std::string_view text);

// The longest duration the broker accepts anywhere (100 years): any stored
// time plus any duration, and backoff arithmetic on it, stays far from int64 overflow.
inline constexpr std::int64_t kMaxDurationMs = 100LL * 365 * 86400 * 1000;

// ISO 8601 duration ("PT1S", "PT5M", "P1DT2H", "PT0.5S") in milliseconds;
// nullopt when malformed or longer than kMaxDurationMs.
std::optional<std::int64_t> parse_iso8601_duration(std::string_view text);

}  // namespace ojs
