// Civil (proleptic Gregorian) dates, the one definition in the tree: C++20's
// std::chrono::year_month_day (RFC 3339 parsing and formatting, cron's calendar).
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>

namespace ojs {

// Days since 1970-01-01 of a date; nullopt when the date does not exist
// (2026-02-31, month 13): parse_rfc3339 refuses it rather than rolling it over.
std::optional<std::int64_t> days_from_civil(int year, unsigned month, unsigned day);

// The date of a day number (days since 1970-01-01).
std::chrono::year_month_day civil_from_days(std::int64_t days);

}  // namespace ojs
