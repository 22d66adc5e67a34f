// Cron expressions and time zones: next tick, DST rules (spec/ojs-cron.md 5.2), validation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include "broker/cron/cron_expression.hpp"
#include "ojs/core/time.hpp"

using ojs::broker::cron::CronExpression;
using ojs::broker::cron::TimeZone;

namespace {
std::string next(const std::string& expr, const std::string& zone, const std::string& after) {
  const auto tz = TimeZone::load(zone);
  EXPECT_TRUE(tz) << zone;
  const auto t = CronExpression::parse(expr).next_after(*ojs::parse_rfc3339(after), *tz);
  return t ? ojs::format_rfc3339(*t) : "none";
}
}  // namespace

TEST(CronExpression, NextTickInUtc) {
  EXPECT_EQ(next("* * * * *", "UTC", "2026-01-01T10:00:30Z"), "2026-01-01T10:01:00.000Z");
  EXPECT_EQ(next("*/15 * * * *", "UTC", "2026-01-01T10:00:00Z"), "2026-01-01T10:15:00.000Z");
  EXPECT_EQ(next("0 0 1 1 *", "UTC", "2026-06-01T00:00:00Z"), "2027-01-01T00:00:00.000Z");
  EXPECT_EQ(next("@weekly", "UTC", "2026-11-23T12:00:00Z"), "2026-11-29T00:00:00.000Z");  // next Sunday
  EXPECT_EQ(next("0 9 * * mon-fri", "UTC", "2026-11-27T10:00:00Z"), "2026-11-30T09:00:00.000Z");  // Friday -> Monday
  EXPECT_EQ(next("30 * * * * *", "UTC", "2026-01-01T10:00:30Z"), "2026-01-01T10:01:30.000Z");  // seconds first
  EXPECT_EQ(next("0 0 13 * 5", "UTC", "2026-01-01T00:00:00Z"), "2026-01-02T00:00:00.000Z");  // day fields OR
}

TEST(CronExpression, TimeZonesShiftTheTick) {
  EXPECT_EQ(next("0 9 * * *", "Asia/Tokyo", "2026-01-01T00:00:00Z"), "2026-01-02T00:00:00.000Z");
  EXPECT_EQ(next("0 9 * * *", "America/New_York", "2026-01-01T00:00:00Z"), "2026-01-01T14:00:00.000Z");  // EST
  EXPECT_EQ(next("0 9 * * *", "America/New_York", "2026-07-01T00:00:00Z"), "2026-07-01T13:00:00.000Z");  // EDT
}

TEST(CronExpression, SpringForwardSkipsTheMissingTime) {
  // 2026-03-08 02:30 does not exist in New York: no tick that day.
  EXPECT_EQ(next("30 2 * * *", "America/New_York", "2026-03-08T05:00:00Z"), "2026-03-09T06:30:00.000Z");
}

TEST(CronExpression, FallBackFiresOnceAtTheFirstInstance) {
  // 2026-11-01 01:30 happens twice in New York: EDT (05:30Z) then EST (06:30Z).
  EXPECT_EQ(next("30 1 * * *", "America/New_York", "2026-11-01T04:00:00Z"), "2026-11-01T05:30:00.000Z");
  EXPECT_EQ(next("30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z"), "2026-11-02T06:30:00.000Z");
}

TEST(CronExpression, EveryIsAFixedInterval) {
  EXPECT_EQ(next("@every 1h30m", "UTC", "2026-01-01T00:00:00Z"), "2026-01-01T01:30:00.000Z");
  EXPECT_THROW(CronExpression::parse("@every 10x"), std::invalid_argument);
}

TEST(CronExpression, InvalidExpressionsAreRefused) {
  for (const char* bad : {"", "not a valid cron", "0 0 0 0 0 0 0", "99 25 32 13 8", "*/0 * * * *", "5-1 * * * *",
                          "0 0 L-31 * *", "0 0 * * 5#6", "0 0 * * L", "0 0 1-5W * *", "0 0 * * 5#3-4", "@fortnightly", "1,,2 * * * *"})
    EXPECT_THROW(CronExpression::parse(bad), std::invalid_argument) << bad;
  try {
    CronExpression::parse("99 * * * *");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("minute field: 99 is outside 0-59"), std::string::npos) << e.what();
  }
}

// Quartz's day specials (spec/ojs-cron.md 3.3), checked against a calendar.
TEST(CronExpression, LastDayOfMonth) {
  EXPECT_EQ(next("0 23 L * *", "UTC", "2026-02-01T00:00:00Z"), "2026-02-28T23:00:00.000Z");
  EXPECT_EQ(next("0 23 L * *", "UTC", "2028-02-01T00:00:00Z"), "2028-02-29T23:00:00.000Z");  // leap year
  EXPECT_EQ(next("0 23 L * *", "UTC", "2026-04-30T23:00:00Z"), "2026-05-31T23:00:00.000Z");
  EXPECT_EQ(next("0 0 L-2 * *", "UTC", "2026-01-01T00:00:00Z"), "2026-01-29T00:00:00.000Z");
  EXPECT_EQ(next("0 0 1,L * *", "UTC", "2026-01-02T00:00:00Z"), "2026-01-31T00:00:00.000Z");  // a list mixes both
  EXPECT_EQ(next("0 23 L * *", "Europe/Paris", "2026-03-01T00:00:00Z"), "2026-03-31T21:00:00.000Z");  // CEST
}

TEST(CronExpression, NearestWeekday) {
  // 2026-11-15 is a Sunday: 15W is Monday the 16th; 2026-08-15 a Saturday: Friday the 14th.
  EXPECT_EQ(next("0 0 15W * *", "UTC", "2026-11-01T00:00:00Z"), "2026-11-16T00:00:00.000Z");
  EXPECT_EQ(next("0 0 15W * *", "UTC", "2026-08-01T00:00:00Z"), "2026-08-14T00:00:00.000Z");
  EXPECT_EQ(next("0 0 15W * *", "UTC", "2026-12-01T00:00:00Z"), "2026-12-15T00:00:00.000Z");  // a Tuesday: itself
  // 2026-08-01 is a Saturday: 1W never leaves the month, so Monday the 3rd.
  EXPECT_EQ(next("0 0 1W * *", "UTC", "2026-07-31T00:00:00Z"), "2026-08-03T00:00:00.000Z");
  // 2026-05-31 is a Sunday: 31W is Friday the 29th; 31W does not fire in 30-day months.
  EXPECT_EQ(next("0 0 31W * *", "UTC", "2026-05-01T00:00:00Z"), "2026-05-29T00:00:00.000Z");
  EXPECT_EQ(next("0 0 31W * *", "UTC", "2026-06-01T00:00:00Z"), "2026-07-31T00:00:00.000Z");
  // LW: the last weekday; 2026-01-31 is a Saturday.
  EXPECT_EQ(next("0 0 LW * *", "UTC", "2026-01-01T00:00:00Z"), "2026-01-30T00:00:00.000Z");
}

TEST(CronExpression, NthAndLastWeekdayOfMonth) {
  EXPECT_EQ(next("0 0 * * 5#3", "UTC", "2026-01-01T00:00:00Z"), "2026-01-16T00:00:00.000Z");  // third Friday
  EXPECT_EQ(next("0 0 * * FRI#3", "UTC", "2026-01-17T00:00:00Z"), "2026-02-20T00:00:00.000Z");
  EXPECT_EQ(next("0 0 * * 1#5", "UTC", "2026-01-01T00:00:00Z"), "2026-03-30T00:00:00.000Z");  // first month with 5 Mondays
  EXPECT_EQ(next("0 0 * * 5L", "UTC", "2026-01-01T00:00:00Z"), "2026-01-30T00:00:00.000Z");   // last Friday
  EXPECT_EQ(next("0 0 * * SUNL", "UTC", "2026-02-01T00:00:00Z"), "2026-02-22T00:00:00.000Z");
  EXPECT_EQ(next("0 0 * * 0#1,6L", "UTC", "2026-01-05T00:00:00Z"), "2026-01-31T00:00:00.000Z");  // list: first Sunday or last Saturday
  EXPECT_EQ(next("0 0 * * 7#1", "UTC", "2026-01-05T00:00:00Z"), "2026-02-01T00:00:00.000Z");  // 7 is Sunday
}

TEST(CronExpression, ImpossibleDatesHaveNoTick) {
  EXPECT_EQ(next("0 0 30 2 *", "UTC", "2026-01-01T00:00:00Z"), "none");
}

TEST(TimeZone, UnknownAndHostileNamesAreRefused) {
  EXPECT_FALSE(TimeZone::load("Mars/Olympus"));
  EXPECT_FALSE(TimeZone::load("../../etc/passwd"));
  EXPECT_TRUE(TimeZone::load("UTC"));
}

// The TZif footer rule (POSIX TZ string) gives the offsets after the last explicit
// transition: in every zone file after 2037, where New York is still on EDT in July.
TEST(TimeZone, FooterRuleGivesDaylightTimeAfter2037) {
  const auto ny = TimeZone::load("America/New_York");
  ASSERT_TRUE(ny);
  EXPECT_EQ(ny->offset_at(*ojs::parse_rfc3339("2040-07-15T12:00:00Z") / 1000), -4 * 3600);
  EXPECT_EQ(ny->offset_at(*ojs::parse_rfc3339("2040-01-15T12:00:00Z") / 1000), -5 * 3600);
  EXPECT_EQ(next("0 9 * * *", "America/New_York", "2040-07-01T00:00:00Z"), "2040-07-01T13:00:00.000Z");
  EXPECT_EQ(next("30 2 * * *", "America/New_York", "2040-03-11T05:00:00Z"), "2040-03-12T06:30:00.000Z");  // spring forward
}

// A slim zone file (zic -b slim, zic's default since 2020b) keeps one explicit
// transition here and leaves every later one to the footer rule: DST is right
// today only when that rule is read. The file is compiled from
// tests/fixtures/tz/ojs-slim.zi with zic when it is installed (libc-bin), else the
// copy compiled with it is used; $TZDIR points the zone library at it.
TEST(TimeZone, SlimZoneFileGivesTodaysDaylightTime) {
  namespace fs = std::filesystem;
  const fs::path fixtures = fs::path(OJS_SOURCE_DIR) / "tests/fixtures/tz";
  fs::path dir = fs::temp_directory_path() / ("ojs-slim-tz-" + std::to_string(::getpid()));
  const std::string zic = "zic -b slim -d '" + dir.string() + "' '" + (fixtures / "ojs-slim.zi").string() + "' 2>/dev/null";
  if (std::system(zic.c_str()) != 0) dir = fixtures / "slim";
  ASSERT_TRUE(fs::exists(dir / "OjsTest/Slim")) << dir;
  const char* saved = std::getenv("TZDIR");
  const std::string saved_value = saved ? saved : "";
  ::setenv("TZDIR", dir.c_str(), 1);
  const auto zone = TimeZone::load("OjsTest/Slim");
  if (saved) ::setenv("TZDIR", saved_value.c_str(), 1);
  else ::unsetenv("TZDIR");
  ASSERT_TRUE(zone);
  EXPECT_EQ(zone->offset_at(*ojs::parse_rfc3339("2026-01-15T12:00:00Z") / 1000), -5 * 3600);
  EXPECT_EQ(zone->offset_at(*ojs::parse_rfc3339("2026-07-15T12:00:00Z") / 1000), -4 * 3600);
  EXPECT_EQ(next("0 9 * * *", "OjsTest/Slim", "2026-01-01T00:00:00Z"), "2026-01-01T14:00:00.000Z");
  EXPECT_EQ(next("0 9 * * *", "OjsTest/Slim", "2026-07-01T00:00:00Z"), "2026-07-01T13:00:00.000Z");
  if (dir != fixtures / "slim") fs::remove_all(dir);
}

// A directory of zones is no zone: refused (the HTTP layer answers 400 naming the
// field), not an exception from reading a directory as a file (a 500).
TEST(TimeZone, ADirectoryOfZonesIsRefused) {
  EXPECT_FALSE(TimeZone::load("America"));
  EXPECT_FALSE(TimeZone::load("Europe/"));
  EXPECT_FALSE(TimeZone::load("/usr/share/zoneinfo/UTC"));
}
