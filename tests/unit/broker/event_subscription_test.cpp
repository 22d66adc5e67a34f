// One SSE client's buffer (spec/ojs-realtime.md 5.4): frames wait for the pull,
// the oldest go beyond the bound and the client is told; heartbeats only when
// idle; finish says goodbye and then ends the response.
#include <gtest/gtest.h>

#include <memory>

#include "broker/events/event_subscription.hpp"

using ojs::broker::EventFilter;
using ojs::broker::EventSubscription;

namespace {
// Pulls once; the chunk when answered at once, "<waiting>" when the pull waits, "<end>" at the end.
std::string pull_now(EventSubscription& sub, std::optional<std::string>* later = nullptr) {
  auto got = std::make_shared<std::string>("<waiting>");  // the callback may run after we return
  sub.pull([got, later](std::optional<std::string> chunk) {
    if (later) *later = chunk;
    *got = chunk ? *chunk : "<end>";
  });
  return *got;
}
}  // namespace

TEST(EventSubscription, DropsTheOldestBeyondTheBufferAndSaysSo) {
  EventSubscription sub(EventFilter{}, "", 3);
  for (int i = 0; i < 5; ++i) sub.offer("e" + std::to_string(i), "id: e" + std::to_string(i) + "\nevent: x\ndata: {}\n\n");
  const auto chunk = pull_now(sub);
  EXPECT_EQ(chunk.rfind("retry: 3000\n\n", 0), 0u) << chunk;
  EXPECT_NE(chunk.find(":events-dropped 2\n\n"), std::string::npos) << chunk;
  EXPECT_NE(chunk.find("\"oldest_dropped_id\":\"e0\""), std::string::npos) << chunk;
  EXPECT_NE(chunk.find("\"newest_dropped_id\":\"e1\""), std::string::npos) << chunk;
  EXPECT_EQ(chunk.find("id: e1\n"), std::string::npos);
  EXPECT_LT(chunk.find("id: e2\n"), chunk.find("id: e4\n"));
}

TEST(EventSubscription, AWaitingPullIsAnsweredByTheNextFrame) {
  EventSubscription sub(EventFilter{}, "", 10);
  pull_now(sub);  // the preface
  std::optional<std::string> later;
  EXPECT_EQ(pull_now(sub, &later), "<waiting>");
  sub.offer("e1", "id: e1\n\n");
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(*later, "id: e1\n\n");
}

TEST(EventSubscription, HeartbeatsOnlyWhenIdleAndEndsAfterGoodbye) {
  EventSubscription sub(EventFilter{}, "", 10);
  pull_now(sub);
  std::optional<std::string> later;
  pull_now(sub, &later);
  const auto now = EventSubscription::Clock::now();
  sub.keep_alive(now, std::chrono::hours(1));
  EXPECT_FALSE(later.has_value()) << "not idle long enough";
  sub.keep_alive(now + std::chrono::hours(2), std::chrono::hours(1));
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(*later, ":heartbeat\n\n");
  sub.finish("event: server.shutdown\ndata: {}\n\n");
  EXPECT_EQ(pull_now(sub), "event: server.shutdown\ndata: {}\n\n");
  EXPECT_EQ(pull_now(sub), "<end>");
  EXPECT_TRUE(sub.abandoned()) << "ended: the hub forgets it";
}

TEST(EventSubscription, AnAbandonedStreamNeverAnswers) {
  EventSubscription sub(EventFilter{}, "", 10);
  pull_now(sub);
  std::optional<std::string> later;
  pull_now(sub, &later);
  sub.abandon();
  sub.offer("e1", "id: e1\n\n");
  EXPECT_FALSE(later.has_value());
  EXPECT_TRUE(sub.abandoned());
}
