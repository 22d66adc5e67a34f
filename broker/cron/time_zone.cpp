#include "broker/cron/time_zone.hpp"

#include <absl/time/civil_time.h>
#include <absl/time/time.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

namespace ojs::broker::cron {

struct TimeZone::Zone {
  absl::TimeZone zone;
};

namespace {

// Zone names only: the library also reads absolute paths, "file:" names and fixed
// offsets ("Fixed/UTC+01:00:00"), none of which a cron definition may name.
bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name.front() == '/' || name.find("..") != std::string::npos) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' || c == '+'; });
}

const absl::CivilSecond kLocalEpoch(1970, 1, 1, 0, 0, 0);

}  // namespace

TimeZone::TimeZone(std::unique_ptr<const Zone> zone) : zone_(std::move(zone)) {}
TimeZone::~TimeZone() = default;

std::shared_ptr<const TimeZone> TimeZone::load(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const TimeZone>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(name); it != cache.end()) return it->second;
  if (!valid_name(name)) return nullptr;
  absl::TimeZone zone;
  if (!absl::LoadTimeZone(name, &zone)) return nullptr;  // unknown, or not a zone file (a directory)
  auto loaded = std::make_shared<const TimeZone>(std::make_unique<const Zone>(Zone{zone}));
  cache[name] = loaded;
  return loaded;
}

int TimeZone::offset_at(std::int64_t utc_s) const {
  return zone_->zone.At(absl::FromUnixSeconds(utc_s)).offset;
}

std::optional<std::int64_t> TimeZone::to_utc(std::int64_t local_s) const {
  const auto info = zone_->zone.At(kLocalEpoch + local_s);
  if (info.kind == absl::TimeZone::TimeInfo::SKIPPED) return std::nullopt;
  return absl::ToUnixSeconds(info.pre);  // UNIQUE: the instant; REPEATED: the first one
}

}  // namespace ojs::broker::cron
