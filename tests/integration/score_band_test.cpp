// The Lua half of the ready-set score (_lib.lua score_pack / score_unpack / score_at),
// run by a real Redis: the same bounds as priority_score.hpp's pack_score and
// unpack_score (tests/unit/broker/priority_score_test.cpp), so a score is never
// composed past 2^53, where doubles stop being exact and the order breaks.
#include <gtest/gtest.h>

#include "support/processes.hpp"

using namespace ojs::test;

namespace {

// EVAL of the helpers and `body`; redis-cli's reply lines joined.
std::string eval_lib(const RedisServer& redis, const std::string& body) {
  std::string out;
  for (const auto& line : redis_lines(redis, {"EVAL", lua_source("_lib.lua") + "\n" + body, "0"})) out += line;
  return out;
}

}  // namespace

TEST(ScoreBandLua, PackAndUnpackAtTheEdges) {
  RedisServer redis;
  EXPECT_EQ(eval_lib(redis, "return string.format('%.0f', score_pack(0, 0))"), "0");
  EXPECT_EQ(eval_lib(redis, "return string.format('%.0f', score_pack(8191, 1099511627775))"), "9007199254740991");
  EXPECT_EQ(eval_lib(redis, "local b, s = score_unpack(score_pack(602, 12345)) return b .. ' ' .. s"), "602 12345");
  EXPECT_EQ(eval_lib(redis, "return string.format('%.0f', score_at(score_pack(700, 0), 5))"), "769658139443205");
}

TEST(ScoreBandLua, PackAndUnpackRefuseWhatIsOutOfRange) {
  RedisServer redis;
  EXPECT_NE(eval_lib(redis, "return score_pack(8192, 0)").find("score band 8192 is outside 0 .. 8191"), std::string::npos);
  EXPECT_NE(eval_lib(redis, "return score_pack(-1, 0)").find("is outside 0 .. 8191"), std::string::npos);
  EXPECT_NE(eval_lib(redis, "return score_pack(0, 1099511627776)").find("score sequence"), std::string::npos);
  EXPECT_NE(eval_lib(redis, "return score_pack(0, -1)").find("score sequence"), std::string::npos);
  EXPECT_NE(eval_lib(redis, "return score_unpack(9007199254740992)").find("is outside the bands"), std::string::npos);
  EXPECT_NE(eval_lib(redis, "return score_at(5, 1)").find("is not the start of a band"), std::string::npos);
}
