// Cron expressions and time zones: next tick, DST rules (spec/ojs-cron.md 5.2), validation.
#include <gtest/gtest.h>

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
                          "0 0 L * *", "0 0 * * 5#3", "@fortnightly", "1,,2 * * * *"})
    EXPECT_THROW(CronExpression::parse(bad), std::invalid_argument) << bad;
  try {
    CronExpression::parse("99 * * * *");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("minute field: 99 is outside 0-59"), std::string::npos) << e.what();
  }
}

TEST(CronExpression, ImpossibleDatesHaveNoTick) {
  EXPECT_EQ(next("0 0 30 2 *", "UTC", "2026-01-01T00:00:00Z"), "none");
}

TEST(TimeZone, UnknownAndHostileNamesAreRefused) {
  EXPECT_FALSE(TimeZone::load("Mars/Olympus"));
  EXPECT_FALSE(TimeZone::load("../../etc/passwd"));
  EXPECT_TRUE(TimeZone::load("UTC"));
}
