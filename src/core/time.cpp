#include "ojs/core/time.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "ojs/core/civil_date.hpp"

namespace ojs {

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::optional<std::int64_t> days_from_civil(int year, unsigned month, unsigned day) {
  using namespace std::chrono;
  const year_month_day date{std::chrono::year{year}, std::chrono::month{month}, std::chrono::day{day}};
  if (!date.ok()) return std::nullopt;
  return sys_days{date}.time_since_epoch().count();
}

std::chrono::year_month_day civil_from_days(std::int64_t days) {
  using namespace std::chrono;
  return year_month_day{sys_days{std::chrono::days{days}}};
}

std::string format_rfc3339(std::int64_t epoch_ms) {
  std::time_t secs = static_cast<std::time_t>(epoch_ms / 1000);
  int millis = static_cast<int>(epoch_ms % 1000);
  if (millis < 0) { millis += 1000; --secs; }
  // Years 1970-9999 by hand: every job reply formats several timestamps, and
  // gmtime_r + snprintf cost ~3,800 instructions each.
  if (secs >= 0 && secs < 253402300800) {
    const int of_day = static_cast<int>(secs % 86400);
    const auto date = civil_from_days(secs / 86400);
    const auto year = static_cast<unsigned>(static_cast<int>(date.year()));
    const auto month = static_cast<unsigned>(date.month());
    const auto day = static_cast<unsigned>(date.day());
    char buf[] = "0000-00-00T00:00:00.000Z";
    const auto put = [&buf](int at, unsigned value, int width) {
      for (int i = at + width - 1; i >= at; --i, value /= 10) buf[i] = static_cast<char>('0' + value % 10);
    };
    put(0, year, 4);
    put(5, month, 2);
    put(8, day, 2);
    put(11, static_cast<unsigned>(of_day / 3600), 2);
    put(14, static_cast<unsigned>(of_day / 60 % 60), 2);
    put(17, static_cast<unsigned>(of_day % 60), 2);
    put(20, static_cast<unsigned>(millis), 3);
    return std::string(buf, sizeof buf - 1);
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[80];  // room for any int in every field (years beyond 9999 come here)
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buf;
}

namespace {

bool read_digits(std::string_view s, std::size_t& pos, int count, int& out) {
  if (pos + count > s.size()) return false;
  int value = 0;
  for (int i = 0; i < count; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  pos += count;
  out = value;
  return true;
}

bool expect(std::string_view s, std::size_t& pos, char c) {
  if (pos < s.size() && (s[pos] == c || (c == 'T' && (s[pos] == 't' || s[pos] == ' ')))) {
    ++pos;
    return true;
  }
  return false;
}

}  // namespace

std::optional<std::int64_t> parse_rfc3339(std::string_view s) {
  std::size_t pos = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!read_digits(s, pos, 4, year) || !expect(s, pos, '-') || !read_digits(s, pos, 2, month) ||
      !expect(s, pos, '-') || !read_digits(s, pos, 2, day) || !expect(s, pos, 'T') ||
      !read_digits(s, pos, 2, hour) || !expect(s, pos, ':') || !read_digits(s, pos, 2, minute) ||
      !expect(s, pos, ':') || !read_digits(s, pos, 2, second))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return std::nullopt;
  int millis = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 3) millis = millis * 10 + (s[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (int i = digits; i < 3; ++i) millis *= 10;
  }
  int offset_minutes = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const int sign = s[pos] == '-' ? -1 : 1;
    ++pos;
    int oh, om;
    if (!read_digits(s, pos, 2, oh) || !expect(s, pos, ':') || !read_digits(s, pos, 2, om))
      return std::nullopt;
    offset_minutes = sign * (oh * 60 + om);
  } else {
    return std::nullopt;  // RFC 3339 requires a zone designator
  }
  if (pos != s.size()) return std::nullopt;
  const auto days = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  if (!days) return std::nullopt;  // 2026-02-31 is no date (it is not 3 March)
  const std::int64_t secs = *days * 86400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
  return secs * 1000 + millis;
}

std::optional<std::int64_t> parse_iso8601_duration(std::string_view s) {
  if (s.size() < 3 || s[0] != 'P') return std::nullopt;
  std::size_t pos = 1;
  bool in_time = false;
  bool any = false;
  double total_ms = 0;
  while (pos < s.size()) {
    if (s[pos] == 'T') {
      if (in_time) return std::nullopt;
      in_time = true;
      ++pos;
      continue;
    }
    std::size_t start = pos;
    while (pos < s.size() && ((s[pos] >= '0' && s[pos] <= '9') || s[pos] == '.')) ++pos;
    if (start == pos || pos >= s.size()) return std::nullopt;
    double value = 0;
    try {
      value = std::stod(std::string(s.substr(start, pos - start)));
    } catch (...) {
      return std::nullopt;
    }
    const char unit = s[pos++];
    double factor = 0;
    if (!in_time) {
      if (unit == 'D') factor = 86400e3;
      else if (unit == 'W') factor = 7 * 86400e3;
      else return std::nullopt;  // years and months have no fixed length
    } else {
      if (unit == 'H') factor = 3600e3;
      else if (unit == 'M') factor = 60e3;
      else if (unit == 'S') factor = 1e3;
      else return std::nullopt;
    }
    total_ms += value * factor;
    any = true;
  }
  // Checked as a double, before the cast: an out-of-range cast is undefined.
  if (!any || !(total_ms <= static_cast<double>(kMaxDurationMs))) return std::nullopt;
  return static_cast<std::int64_t>(total_ms + 0.5);
}

}  // namespace ojs
