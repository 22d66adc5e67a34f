// Cron expressions (spec/ojs-cron.md sections 3 and 4): 5 fields, or 6 with
// seconds first; `*`, lists, ranges, steps, month and weekday names; @yearly,
// @annually, @monthly, @weekly, @daily, @midnight, @hourly and @every <duration>.
// (`L`, `W` and `#` are refused with a clear message: not supported yet.)
#pragma once
#include <bitset>
#include <cstdint>
#include <optional>
#include <string>

#include "broker/cron/time_zone.hpp"

namespace ojs::broker::cron {

class CronExpression {
 public:
  // Throws std::invalid_argument with a message that names the field and the rule.
  static CronExpression parse(const std::string& text);

  // The first tick strictly after `after_ms` (UTC epoch ms), evaluated in `zone`:
  // wall times skipped by DST never fire, repeated ones fire once (the first).
  // nullopt when no tick exists within five years (e.g. "0 0 30 2 *").
  std::optional<std::int64_t> next_after(std::int64_t after_ms, const TimeZone& zone) const;

 private:
  std::int64_t every_ms_ = 0;  // @every: fixed interval from the previous tick
  std::bitset<60> seconds_, minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;    // 1-31
  std::bitset<13> months_;  // 1-12
  std::bitset<7> weekdays_; // 0 = Sunday
  bool any_day_ = true, any_weekday_ = true;  // '*' (standard cron ORs two restricted day fields)

  bool day_matches(int year, int month, int day) const;
};

}  // namespace ojs::broker::cron
