// IANA time zones from the system's tzdata (/usr/share/zoneinfo, or $TZDIR),
// without touching the process's TZ: UTC offsets at an instant, and the UTC
// instant of a local wall-clock time with the DST rules of spec/ojs-cron.md 5.2.
// The zone files are read by Abseil's time zone library (cctz, Debian libabsl-dev):
// it applies the TZif footer rule beyond the last explicit transition, which slim
// zone files (zic's default since 2020b) depend on today and every file after 2037.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace ojs::broker::cron {

class TimeZone {
 public:
  // nullptr when the name is not a zone ("UTC" always is): unknown, a directory of
  // zones ("America"), or a path ("../", absolute).
  static std::shared_ptr<const TimeZone> load(const std::string& name);

  // Seconds east of UTC at the UTC instant `utc_s`.
  int offset_at(std::int64_t utc_s) const;
  // The UTC instant of a local wall time given as seconds since 1970-01-01T00:00
  // local. nullopt when that wall time does not exist (skipped by a spring-forward
  // jump); the first instance when it exists twice (fall back).
  std::optional<std::int64_t> to_utc(std::int64_t local_s) const;

  struct Zone;  // the library's zone (time_zone.cpp)
  explicit TimeZone(std::unique_ptr<const Zone> zone);
  ~TimeZone();

 private:
  std::unique_ptr<const Zone> zone_;
};

}  // namespace ojs::broker::cron
