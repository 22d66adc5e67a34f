// XID errors: the action table, and the event thread against the fake NVML
// library (tests/fixtures/nvml), whose nvmlEventSetWait_v2 delivers what a
// test writes to $FAKE_NVML_XID_FILE.
#include "worker/discovery/xid_policy.hpp"
#include "worker/discovery/xid_watcher.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace ojs::worker {
namespace {

using namespace std::chrono_literals;

TEST(XidPolicy, FaultsThatNeedAResetMakeTheGpuUnhealthy) {
  for (const unsigned long long xid : {48, 63, 64, 74, 79, 95})
    EXPECT_EQ(classify_xid(xid).action, XidAction::unhealthy) << xid;
  EXPECT_EQ(classify_xid(13).action, XidAction::ignore);  // the application's own fault
  EXPECT_EQ(classify_xid(31).action, XidAction::ignore);
  EXPECT_EQ(classify_xid(94).action, XidAction::warn);    // contained: the GPU keeps working
  EXPECT_EQ(classify_xid(4242).action, XidAction::unhealthy);  // unknown: do not gamble
  EXPECT_EQ(xid_reason(79), "xid 79: GPU has fallen off the bus");
}

std::vector<DeviceFault> wait_for_faults(DeviceFaults& faults, std::chrono::seconds limit = 20s) {
  for (const auto give_up = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < give_up;) {
    auto taken = faults.take();
    if (!taken.empty()) return taken;
    std::this_thread::sleep_for(10ms);
  }
  return {};
}

bool wait_until_consumed(const std::filesystem::path& file, std::chrono::seconds limit = 20s) {
  for (const auto give_up = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < give_up;) {
    if (!std::filesystem::exists(file)) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(XidWatcher, InjectedXid79IsPostedAsAFaultOfThatGpu) {
  testing::ScratchDir dir("xid");
  const auto inject = dir.path() / "xid";
  ::setenv("FAKE_NVML_XID_FILE", inject.c_str(), 1);
  DeviceFaults faults;
  std::string why;
  {
    auto watcher = XidWatcher::start(OJS_FAKE_NVML, faults, &why);
    ASSERT_TRUE(watcher) << why;
    EXPECT_EQ(watcher->watched_gpus(), 2u);

    std::ofstream(inject) << "1 13\n";  // an application fault: consumed, not posted
    ASSERT_TRUE(wait_until_consumed(inject));
    std::ofstream(inject) << "0 79\n";
    const auto posted = wait_for_faults(faults);
    ASSERT_EQ(posted.size(), 1u);
    EXPECT_EQ(posted[0].gpu_index, 0u);
    EXPECT_EQ(posted[0].xid, 79u);
    EXPECT_EQ(posted[0].reason, "xid 79: GPU has fallen off the bus");
  }  // the destructor joins the thread
  ::unsetenv("FAKE_NVML_XID_FILE");
}

TEST(XidWatcher, MissingLibraryMeansNoWatcherAndSaysWhy) {
  DeviceFaults faults;
  std::string why;
  EXPECT_FALSE(XidWatcher::start("libnvidia-ml-not-installed.so.1", faults, &why));
  EXPECT_NE(why.find("libnvidia-ml-not-installed"), std::string::npos);
}

}  // namespace
}  // namespace ojs::worker
