#include "broker/cron/time_zone.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>

namespace ojs::broker::cron {

namespace {

std::int64_t be(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  if (bytes == 4) return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
  return static_cast<std::int64_t>(v);
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name.front() == '/' || name.find("..") != std::string::npos) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' || c == '+'; });
}

}  // namespace

std::shared_ptr<const TimeZone> TimeZone::load(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const TimeZone>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(name); it != cache.end()) return it->second;
  auto zone = std::make_shared<TimeZone>();
  if (name != "UTC" && name != "Etc/UTC") {
    if (!valid_name(name)) return nullptr;
    std::ifstream in("/usr/share/zoneinfo/" + name, std::ios::binary);
    const std::vector<unsigned char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (data.size() < 44 || data[0] != 'T' || data[1] != 'Z' || data[2] != 'i' || data[3] != 'f') return nullptr;
    // Header: counts of isutc, isstd, leap, time, type, char entries.
    auto counts = [&](std::size_t at) {
      std::array<std::int64_t, 6> c{};
      for (int i = 0; i < 6; ++i) c[i] = be(&data[at + 20 + 4 * i], 4);
      return c;
    };
    auto c = counts(0);
    std::size_t at = 44;
    int time_bytes = 4;
    if (data[4] >= '2') {  // skip the 32-bit block, read the 64-bit one
      at += c[3] * 4 + c[3] + c[4] * 6 + c[5] + c[2] * 8 + c[1] + c[0];
      if (data.size() < at + 44) return nullptr;
      c = counts(at);
      at += 44;
      time_bytes = 8;
    }
    const auto timecnt = c[3], typecnt = c[4];
    if (typecnt < 1 || data.size() < at + timecnt * (time_bytes + 1) + typecnt * 6) return nullptr;
    std::vector<int> type_offsets;
    const std::size_t types_at = at + timecnt * (time_bytes + 1);
    for (std::int64_t i = 0; i < typecnt; ++i) type_offsets.push_back(static_cast<int>(be(&data[types_at + 6 * i], 4)));
    for (std::int64_t i = 0; i < timecnt; ++i) {
      zone->transitions_.push_back(be(&data[at + i * time_bytes], time_bytes));
      const auto type = data[at + timecnt * time_bytes + i];
      if (type >= type_offsets.size()) return nullptr;
      zone->offsets_.push_back(type_offsets[type]);
    }
    zone->initial_offset_ = type_offsets[0];
  }
  cache[name] = zone;
  return zone;
}

int TimeZone::offset_at(std::int64_t utc_s) const {
  const auto it = std::upper_bound(transitions_.begin(), transitions_.end(), utc_s);
  if (it == transitions_.begin()) return initial_offset_;
  return offsets_[static_cast<std::size_t>(it - transitions_.begin() - 1)];
}

std::optional<std::int64_t> TimeZone::to_utc(std::int64_t local_s) const {
  // Candidates: the local time read with the offset in force a day before and a
  // day after (offsets change at most once around a wall time in real zones).
  std::optional<std::int64_t> best;
  for (const auto probe : {local_s - 86400, local_s + 86400}) {
    const std::int64_t utc = local_s - offset_at(probe - offset_at(probe));
    if (utc + offset_at(utc) == local_s && (!best || utc < *best)) best = utc;
  }
  return best;
}

}  // namespace ojs::broker::cron
