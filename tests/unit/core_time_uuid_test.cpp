#include <gtest/gtest.h>

#include <set>

#include "ojs/core/digest.hpp"
#include "ojs/core/time.hpp"
#include "ojs/core/uuid.hpp"

using namespace ojs;

TEST(Time, Rfc3339RoundTripsAndHonoursOffsets) {
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse_rfc3339("2026-11-22T10:00:00.123Z"), 1795341600123LL);
  EXPECT_EQ(parse_rfc3339("2026-11-22T12:00:00+02:00"), parse_rfc3339("2026-11-22T10:00:00Z"));
  EXPECT_EQ(format_rfc3339(1795341600123LL), "2026-11-22T10:00:00.123Z");
  EXPECT_EQ(parse_rfc3339(format_rfc3339(1234567890123LL)), 1234567890123LL);
  // The hand-written path (1970-9999) agrees with gmtime_r at the edges of days, months, leap years and its range.
  EXPECT_EQ(format_rfc3339(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_rfc3339(951868799999LL), "2000-02-29T23:59:59.999Z");
  EXPECT_EQ(format_rfc3339(951868800000LL), "2000-03-01T00:00:00.000Z");
  EXPECT_EQ(format_rfc3339(4107542400000LL), "2100-03-01T00:00:00.000Z");
  EXPECT_EQ(format_rfc3339(253402300799999LL), "9999-12-31T23:59:59.999Z");
  EXPECT_EQ(format_rfc3339(-1), "1969-12-31T23:59:59.999Z");
  for (std::int64_t ms = 0; ms < 253402300800000LL; ms += 7919LL * 86400000LL + 3600123LL)
    EXPECT_EQ(parse_rfc3339(format_rfc3339(ms)), ms) << ms;
  EXPECT_FALSE(parse_rfc3339("2026-11-22T10:00:00"));   // no zone
  EXPECT_FALSE(parse_rfc3339("2026-13-01T00:00:00Z"));  // month 13
  EXPECT_FALSE(parse_rfc3339("yesterday"));
}

// A date that does not exist is refused, not rolled over (2026-02-31 read as 3 March).
TEST(Time, Rfc3339RefusesDatesThatDoNotExist) {
  EXPECT_FALSE(parse_rfc3339("2026-02-31T00:00:00Z"));
  EXPECT_FALSE(parse_rfc3339("2026-02-29T00:00:00Z"));  // not a leap year
  EXPECT_FALSE(parse_rfc3339("2026-04-31T00:00:00Z"));
  EXPECT_EQ(parse_rfc3339("2028-02-29T00:00:00Z"), parse_rfc3339("2028-03-01T00:00:00Z").value() - 86400000);
}

TEST(Time, Iso8601Durations) {
  EXPECT_EQ(parse_iso8601_duration("PT1S"), 1000);
  EXPECT_EQ(parse_iso8601_duration("PT5M"), 300000);
  EXPECT_EQ(parse_iso8601_duration("PT0.25S"), 250);
  EXPECT_EQ(parse_iso8601_duration("P1DT2H"), (24 + 2) * 3600000LL);
  EXPECT_FALSE(parse_iso8601_duration("P1M"));  // months have no fixed length
  EXPECT_FALSE(parse_iso8601_duration("1S"));
  EXPECT_FALSE(parse_iso8601_duration("PT"));
}

TEST(Uuid, V7IsLowercaseVersionSevenAndUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto id = make_uuidv7();
    EXPECT_TRUE(is_uuidv7(id)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_FALSE(is_uuidv7("550e8400-e29b-41d4-a716-446655440000"));  // v4
  EXPECT_FALSE(is_uuidv7("019461A8-1A2B-7C3D-8E4F-5A6B7C8D9E0F"));  // uppercase
  EXPECT_FALSE(is_uuidv7("019461a8-1a2b-7c3d-ce4f-5a6b7c8d9e0f"));  // wrong variant
}

// A 10^20-day duration was cast out of range into a negative value.
TEST(Time, DurationsBeyondTheBoundAreRefusedNotWrapped) {
  EXPECT_FALSE(parse_iso8601_duration("P99999999999999999999D"));
  EXPECT_FALSE(parse_iso8601_duration("PT1e400S"));
  EXPECT_FALSE(parse_iso8601_duration("P36501D"));  // just over 100 years
  EXPECT_EQ(parse_iso8601_duration("P36500D"), kMaxDurationMs);
}

// One hex and one SHA-256 for the tree (ojs/core/digest.hpp): the known answers.
TEST(Digest, Sha256AndHexKnownAnswers) {
  // printf %s secret | sha256sum
  EXPECT_EQ(ojs::sha256_hex("secret"), "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b");
  EXPECT_EQ(ojs::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(ojs::sha256_hex16("secret"), "2bb80d537b1da3e3");
  EXPECT_EQ(ojs::sha1_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  const unsigned char bytes[] = {0x00, 0x0f, 0xa0, 0xff};
  EXPECT_EQ(ojs::hex_lower(bytes, sizeof bytes), "000fa0ff");
}
