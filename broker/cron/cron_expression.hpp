// Cron expressions (spec/ojs-cron.md sections 3 and 4): 5 fields, or 6 with
// seconds first; `*`, lists, ranges, steps, month and weekday names; @yearly,
// @annually, @monthly, @weekly, @daily, @midnight, @hourly and @every <duration>;
// and Quartz's day specials: day-of-month `L` (last day), `L-n` (n days before
// it), `LW` (last weekday), `nW` (the weekday nearest day n, within the month);
// day-of-week `nL` (the month's last weekday n: 5L = last Friday) and `n#k` (its
// k-th weekday n: 5#3 = third Friday). Names work too (FRIL, FRI#3).
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
  std::bitset<32> before_last_;       // L-n: bit n (L is L-0)
  bool last_weekday_ = false;         // LW
  std::bitset<32> nearest_weekday_;   // nW: bit n
  std::bitset<7> last_of_weekday_;    // nL: bit n
  std::bitset<7 * 6> nth_weekday_;    // n#k: bit n * 6 + k (k 1-5)

  bool day_matches(int year, int month, int day) const;
};

}  // namespace ojs::broker::cron
