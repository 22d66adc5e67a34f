// IANA time zones from the system's tzdata (/usr/share/zoneinfo, TZif v2+),
// without touching the process's TZ: UTC offsets at an instant, and the UTC
// instant of a local wall-clock time with the DST rules of spec/ojs-cron.md 5.2.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ojs::broker::cron {

class TimeZone {
 public:
  // nullptr when the name is not a valid zone ("UTC" always is).
  static std::shared_ptr<const TimeZone> load(const std::string& name);

  // Seconds east of UTC at the UTC instant `utc_s`.
  int offset_at(std::int64_t utc_s) const;
  // The UTC instant of a local wall time given as seconds since 1970-01-01T00:00
  // local. nullopt when that wall time does not exist (skipped by a spring-forward
  // jump); the first instance when it exists twice (fall back).
  std::optional<std::int64_t> to_utc(std::int64_t local_s) const;

 private:
  std::vector<std::int64_t> transitions_;  // UTC seconds, ascending
  std::vector<int> offsets_;               // offset in force from transitions_[i]
  int initial_offset_ = 0;                 // before the first transition
};

}  // namespace ojs::broker::cron
