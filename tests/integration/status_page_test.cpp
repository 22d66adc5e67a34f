// The read-only status page (GET /ojs/status) rendered by a real headless
// Chromium: a screenshot that is not blank, and a DOM that shows the worker and
// why a job waits. Skipped when no Chromium is installed
// (scripts/install-deps.sh installs the Debian `chromium` package).
#include <gtest/gtest.h>

#include <filesystem>

#include "ojs/client/http_client.hpp"
#include "support/chromium.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"

using nlohmann::json;
using namespace ojs::test;
namespace fs = std::filesystem;

TEST(StatusPage, ServedAsHtmlWithoutExternalAssets) {
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  ojs::HttpClientOptions options;
  options.base_url = broker.url();
  ojs::HttpClient http(options);
  const auto r = http.get("/ojs/status");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.at("content-type").rfind("text/html", 0), 0u);
  EXPECT_NE(r.body.find("<table id=\"workers\""), std::string::npos);
  EXPECT_EQ(r.body.find("<script"), std::string::npos);
  EXPECT_EQ(r.body.find("http://"), std::string::npos);
  EXPECT_EQ(r.body.find("https://"), std::string::npos);
}

TEST(StatusPage, HeadlessChromiumRendersWorkersQueuesAndWaitingReasons) {
  const auto chromium = find_chromium();
  // A missing browser fails loudly: scripts/install-deps.sh installs it, and a skip would pass silently.
  ASSERT_FALSE(chromium.empty()) << "chromium not found on PATH; install the Debian package `chromium` (scripts/install-deps.sh)";
  RedisServer redis;
  BrokerProcess broker{redis.url()};
  Api api{broker.url()};
  api.push(ml_job("training", {{"ext_ml_gpu_count", 2}, {"ext_ml_gpu_type", "nvidia-a100"}}));
  api.push(ml_job("training", {{"ext_ml_gpu_count", 8}, {"ext_ml_gpu_memory_gb", 80}, {"ext_ml_gpu_interconnect", "nvlink"}}));
  api.push(ml_job("inference", {{"ext_ml_gpu_type", "nvidia-l4"}}));
  ASSERT_EQ(api.fetch({"training", "inference"}, "a100-node-7", 1, {{"capabilities", example_worker("4xa100-pcie")}}).size(), 1u);
  ASSERT_EQ(api.fetch({"training", "inference"}, "a100-node-7", 1, {{"capabilities", example_worker("4xa100-pcie")}}).size(), 0u);

  const auto dir = make_temp_dir("status-page");
  const auto url = broker.url() + "/ojs/status";
  const auto png = dir + "/s.png";
  auto args = chromium_args(chromium, dir + "/profile-shot");
  args.insert(args.end(), {"--screenshot=" + png, "--window-size=1200,900", url});
  const auto shot = run_process(args, 120);
  ASSERT_TRUE(fs::exists(png)) << shot.output;
  EXPECT_GT(fs::file_size(png), 8000u) << "screenshot looks blank: " << png;
  std::cout << "status page screenshot: " << png << std::endl;

  args = chromium_args(chromium, dir + "/profile-dom");
  args.insert(args.end(), {"--dump-dom", url});
  const auto dom = run_process(args, 120);
  EXPECT_NE(dom.output.find("a100-node-7"), std::string::npos) << dom.output;
  EXPECT_NE(dom.output.find("0/1 workers"), std::string::npos) << dom.output;  // a waiting reason
  EXPECT_NE(dom.output.find("GB per GPU"), std::string::npos) << dom.output;
  EXPECT_NE(dom.output.find("training"), std::string::npos);
  EXPECT_NE(dom.output.find("inference"), std::string::npos);
}

// Lost workers no longer crowd the page: it shows all, live or lost
// workers, a page at a time, with links (no scripts), in a real browser too.
TEST(StatusPage, WorkersAreFilteredAndPaged) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--worker-dead-after-ms", "3000"}};
  Api api{broker.url()};
  for (const char* w : {"old-1", "old-2", "old-3"}) api.fetch({"sp"}, w);
  ojs::HttpClient http(ojs::HttpClientOptions{broker.url()});
  // Silent past --worker-dead-after-ms: lost (the page says so once it is).
  ASSERT_TRUE(wait_until([&] { return http.get("/ojs/status?workers=lost").body.find("lost (3)") != std::string::npos; }));
  api.fetch({"sp"}, "fresh-1");

  const auto live = http.get("/ojs/status?workers=live").body;
  EXPECT_NE(live.find("data-worker=\"fresh-1\""), std::string::npos) << live;
  EXPECT_EQ(live.find("data-worker=\"old-1\""), std::string::npos);
  const auto lost = http.get("/ojs/status?workers=lost&per_page=2").body;
  EXPECT_EQ(lost.find("data-worker=\"fresh-1\""), std::string::npos);
  EXPECT_NE(lost.find("page 1 of 2"), std::string::npos) << lost;
  EXPECT_NE(lost.find("workers=lost&amp;page=2&amp;per_page=2"), std::string::npos) << lost;
  const auto second = http.get("/ojs/status?workers=lost&page=2&per_page=2").body;
  long rows = 0;
  for (auto at = second.find("data-worker="); at != std::string::npos; at = second.find("data-worker=", at + 1)) ++rows;
  EXPECT_EQ(rows, 1) << second;
  auto bad = http.get("/ojs/status?workers=dead");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("workers"), std::string::npos);

  const auto chromium = find_chromium();
  ASSERT_FALSE(chromium.empty()) << "chromium not found on PATH; install the Debian package `chromium` (scripts/install-deps.sh)";
  const auto dir = make_temp_dir("status-page-workers");
  auto args = chromium_args(chromium, dir + "/profile");
  args.insert(args.end(), {"--dump-dom", broker.url() + "/ojs/status?workers=lost&per_page=2"});
  const auto dom = run_process(args, 120);
  EXPECT_NE(dom.output.find("page 1 of 2"), std::string::npos) << dom.output;
  EXPECT_NE(dom.output.find("<b>lost ("), std::string::npos) << dom.output;  // the current filter (fresh-1 may be lost by now)
  EXPECT_NE(dom.output.find("workers=live&amp;page=1"), std::string::npos) << dom.output;
}
