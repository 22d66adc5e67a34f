#include "broker/cron/cron_expression.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "ojs/core/civil_date.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker::cron {

namespace {

// Civil dates come from ojs/core/time.hpp (std::chrono::year_month_day): the
// days of a date the cron loop builds (always a real one), its weekday (0 = Sunday).
std::int64_t day_number(int year, int month, int day) {
  return days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)).value();
}

int weekday_of(std::int64_t days) {
  return static_cast<int>(std::chrono::weekday{std::chrono::sys_days{std::chrono::days{days}}}.c_encoding());
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

struct FieldSpec {
  const char* name;
  int lo, hi;
  std::map<std::string, int> names;
};

int value_of(const std::string& token, const FieldSpec& f) {
  if (auto it = f.names.find(upper(token)); it != f.names.end()) return it->second;
  if (token.empty() || !std::all_of(token.begin(), token.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
      token.size() > 4)
    throw std::invalid_argument(std::string(f.name) + " field: '" + token + "' is not a number or a name");
  const int v = std::stoi(token);
  if (v < f.lo || v > f.hi)
    throw std::invalid_argument(std::string(f.name) + " field: " + token + " is outside " + std::to_string(f.lo) + "-" + std::to_string(f.hi));
  return v;
}

// Parses one field into the set of its values; `star` tells whether it was '*'.
std::vector<int> parse_field(const std::string& text, const FieldSpec& f, bool& star) {
  std::vector<int> out;
  star = text == "*" || text == "?";
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) throw std::invalid_argument(std::string(f.name) + " field: empty list item in '" + text + "'");
    std::string rest = upper(item);  // names (JUL, WED) aside, L W # are the special characters
    for (const auto& [name, _] : f.names)
      for (auto at = rest.find(name); at != std::string::npos; at = rest.find(name)) rest.erase(at, name.size());
    if (rest.find_first_of("LW#") != std::string::npos)
      throw std::invalid_argument(std::string(f.name) + " field: '" + item +
                                  "' misuses L, W or #: day-of-month takes L, L-n, LW or nW, day-of-week nL or n#k, each as a list item of its own");
    int step = 1;
    std::string range = item;
    if (const auto slash = item.find('/'); slash != std::string::npos) {
      range = item.substr(0, slash);
      const auto step_text = item.substr(slash + 1);
      if (step_text.empty() || !std::all_of(step_text.begin(), step_text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
          step_text.size() > 4 || std::stoi(step_text) == 0)
        throw std::invalid_argument(std::string(f.name) + " field: step '" + step_text + "' must be a positive integer");
      step = std::stoi(step_text);
    }
    int lo = f.lo, hi = f.hi;
    if (range != "*" && range != "?") {
      if (const auto dash = range.find('-'); dash != std::string::npos) {
        lo = value_of(range.substr(0, dash), f);
        hi = value_of(range.substr(dash + 1), f);
        if (lo > hi) throw std::invalid_argument(std::string(f.name) + " field: range '" + range + "' runs backwards");
      } else {
        lo = value_of(range, f);
        if (item.find('/') == std::string::npos) hi = lo;
      }
    }
    for (int v = lo; v <= hi; v += step) out.push_back(v);
  }
  if (out.empty()) throw std::invalid_argument(std::string(f.name) + " field is empty");
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 4 && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// Takes the L/W/# items out of a day field's list; what is left goes to parse_field.
// Each special is whole (a range or step with them is refused by parse_field).
std::string take_specials(const std::string& text, const std::function<bool(const std::string&)>& special) {
  std::stringstream items(text);
  std::string item, rest;
  while (std::getline(items, item, ','))
    if (!special(upper(item))) rest += (rest.empty() ? "" : ",") + item;
  return rest;
}

int days_in_month(int year, int month) {
  using namespace std::chrono;
  const year_month_day_last last{std::chrono::year{year}, month_day_last{std::chrono::month{static_cast<unsigned>(month)}}};
  return static_cast<int>(static_cast<unsigned>(last.day()));
}

// Go-style durations for @every: "1h30m", "45s", "500ms".
std::int64_t parse_every(const std::string& text) {
  std::int64_t total = 0;
  std::size_t i = 0;
  if (text.empty()) throw std::invalid_argument("@every needs a duration such as 30m, 1h30m or 45s");
  while (i < text.size()) {
    std::size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i || j - i > 9) throw std::invalid_argument("@every: '" + text + "' is not a duration such as 30m, 1h30m or 45s");
    const std::int64_t n = std::stoll(text.substr(i, j - i));
    std::size_t k = j;
    while (k < text.size() && std::isalpha(static_cast<unsigned char>(text[k]))) ++k;
    const auto unit = text.substr(j, k - j);
    static const std::map<std::string, std::int64_t> kUnits = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    const auto u = kUnits.find(unit);
    if (u == kUnits.end()) throw std::invalid_argument("@every: unit '" + unit + "' is not one of ms, s, m, h");
    total += n * u->second;  // each term < 2^52 and the sum checked below: no overflow
    // The broker's bound on any duration; a longer interval once wrapped next_run_at negative.
    if (total > kMaxDurationMs) throw std::invalid_argument("@every: the interval must be at most 100 years (876000h)");
    i = k;
  }
  if (total < 1000) throw std::invalid_argument("@every: the interval must be at least 1s");
  return total;
}

}  // namespace

CronExpression CronExpression::parse(const std::string& raw) {
  std::string text = raw;
  text.erase(0, text.find_first_not_of(" \t"));
  text.erase(text.find_last_not_of(" \t") + 1 == 0 ? 0 : text.find_last_not_of(" \t") + 1);
  if (text.empty()) throw std::invalid_argument("expression is empty");
  CronExpression e;
  if (text[0] == '@') {
    if (text.rfind("@every ", 0) == 0) {
      e.every_ms_ = parse_every(text.substr(7));
      return e;
    }
    static const std::map<std::string, std::string> kAliases = {
        {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
        {"@daily", "0 0 * * *"},  {"@midnight", "0 0 * * *"}, {"@hourly", "0 * * * *"}};
    const auto it = kAliases.find(text);
    if (it == kAliases.end())
      throw std::invalid_argument("'" + text + "' is not one of @yearly @annually @monthly @weekly @daily @midnight @hourly @every <duration>");
    text = it->second;
  }
  std::vector<std::string> fields;
  std::stringstream in(text);
  for (std::string f; in >> f;) fields.push_back(f);
  if (fields.size() != 5 && fields.size() != 6)
    throw std::invalid_argument("expected 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), got " +
                                std::to_string(fields.size()));
  if (fields.size() == 5) fields.insert(fields.begin(), "0");
  static const FieldSpec kSecond{"second", 0, 59, {}}, kMinute{"minute", 0, 59, {}}, kHour{"hour", 0, 23, {}},
      kDay{"day-of-month", 1, 31, {}},
      kMonth{"month", 1, 12, {{"JAN", 1}, {"FEB", 2}, {"MAR", 3}, {"APR", 4}, {"MAY", 5}, {"JUN", 6}, {"JUL", 7}, {"AUG", 8},
                                {"SEP", 9}, {"OCT", 10}, {"NOV", 11}, {"DEC", 12}}},
      kWeekday{"day-of-week", 0, 7, {{"SUN", 0}, {"MON", 1}, {"TUE", 2}, {"WED", 3}, {"THU", 4}, {"FRI", 5}, {"SAT", 6}}};
  bool star = false;
  for (int v : parse_field(fields[0], kSecond, star)) e.seconds_.set(v);
  for (int v : parse_field(fields[1], kMinute, star)) e.minutes_.set(v);
  for (int v : parse_field(fields[2], kHour, star)) e.hours_.set(v);
  for (int v : parse_field(fields[4], kMonth, star)) e.months_.set(v);

  const auto day_rest = take_specials(fields[3], [&](const std::string& item) {
    if (item == "L") return e.before_last_.set(0), true;
    if (item == "LW") return e.last_weekday_ = true, true;
    if (item.rfind("L-", 0) == 0) {
      const auto n = item.substr(2);
      if (!all_digits(n) || std::stoi(n) > 30) throw std::invalid_argument("day-of-month field: '" + item + "': L-n needs n in 0-30");
      return e.before_last_.set(std::stoi(n)), true;
    }
    if (item.size() > 1 && item.back() == 'W') {
      const auto n = item.substr(0, item.size() - 1);
      if (!all_digits(n)) throw std::invalid_argument("day-of-month field: '" + item + "': nW needs a day number (15W)");
      e.nearest_weekday_.set(value_of(n, kDay));
      return true;
    }
    return false;
  });
  e.any_day_ = false;  // a field of specials alone is restricted; parse_field tells '*' from the rest
  if (!day_rest.empty()) {
    for (int v : parse_field(day_rest, kDay, e.any_day_)) e.days_.set(v);
  }
  const auto weekday_rest = take_specials(fields[5], [&](const std::string& item) {
    if (const auto hash = item.find('#'); hash != std::string::npos) {
      const auto k = item.substr(hash + 1);
      if (!all_digits(k) || std::stoi(k) < 1 || std::stoi(k) > 5)
        throw std::invalid_argument("day-of-week field: '" + item + "': n#k needs k in 1-5 (5#3 = third Friday)");
      e.nth_weekday_.set((value_of(item.substr(0, hash), kWeekday) % 7) * 6 + std::stoi(k));
      return true;
    }
    if (item.size() > 1 && item.back() == 'L') {
      e.last_of_weekday_.set(value_of(item.substr(0, item.size() - 1), kWeekday) % 7);
      return true;
    }
    if (item == "L") throw std::invalid_argument("day-of-week field: L needs a weekday before it (5L = the last Friday)");
    return false;
  });
  e.any_weekday_ = false;
  if (!weekday_rest.empty()) {
    for (int v : parse_field(weekday_rest, kWeekday, e.any_weekday_)) e.weekdays_.set(v % 7);  // 7 is Sunday too
  }
  return e;
}

bool CronExpression::day_matches(int year, int month, int day) const {
  const int last = days_in_month(year, month);
  const int weekday = weekday_of(day_number(year, month, day));
  bool dom = days_.test(day) || (last - day <= 30 && before_last_.test(last - day));
  if (last_weekday_ || nearest_weekday_.any()) {
    // The weekday nearest day n, never leaving the month: Saturday -> Friday (or
    // Monday the 3rd for the 1st), Sunday -> Monday (or Friday for the last day).
    auto nearest = [&](int n) {
      const int wd = weekday_of(day_number(year, month, n));
      if (wd == 6) return n == 1 ? 3 : n - 1;
      if (wd == 0) return n == last ? n - 2 : n + 1;
      return n;
    };
    if (last_weekday_ && day == nearest(last)) dom = true;
    for (int n = 1; n <= last && !dom; ++n)
      if (nearest_weekday_.test(n) && nearest(n) == day) dom = true;
  }
  bool dow = weekdays_.test(weekday);
  if (last_of_weekday_.test(weekday) && day + 7 > last) dow = true;
  if ((day - 1) / 7 + 1 <= 5 && nth_weekday_.test(weekday * 6 + (day - 1) / 7 + 1)) dow = true;
  if (any_day_ && any_weekday_) return true;
  if (any_day_) return dow;
  if (any_weekday_) return dom;
  return dom || dow;  // both restricted: either matches (standard cron)
}

std::optional<std::int64_t> CronExpression::next_after(std::int64_t after_ms, const TimeZone& zone) const {
  if (every_ms_ > 0) return after_ms + every_ms_;
  const std::int64_t after_s = after_ms >= 0 ? after_ms / 1000 : -((-after_ms + 999) / 1000);
  const std::int64_t local_after = after_s + zone.offset_at(after_s);
  const std::int64_t first_day = local_after >= 0 ? local_after / 86400 : -((-local_after + 86399) / 86400);
  for (std::int64_t day = first_day; day < first_day + 5 * 366 + 2; ++day) {
    const auto date = civil_from_days(day);
    const int y = static_cast<int>(date.year());
    const int m = static_cast<int>(static_cast<unsigned>(date.month()));
    const int d = static_cast<int>(static_cast<unsigned>(date.day()));
    if (!months_.test(m) || !day_matches(y, m, d)) continue;
    for (int h = 0; h < 24; ++h) {
      if (!hours_.test(h)) continue;
      for (int mi = 0; mi < 60; ++mi) {
        if (!minutes_.test(mi)) continue;
        const std::int64_t minute_start = day * 86400 + h * 3600 + mi * 60;
        if (minute_start + 59 < local_after - 7200) continue;  // well before: skip cheaply (2 h covers DST shifts)
        for (int s = 0; s < 60; ++s) {
          if (!seconds_.test(s)) continue;
          const auto utc = zone.to_utc(minute_start + s);
          if (utc && *utc > after_s) return *utc * 1000;
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace ojs::broker::cron
