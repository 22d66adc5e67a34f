// assign_devices: all or none, NVLink cliques, NUMA preference, health.
#include <gtest/gtest.h>

#include "ojs/ml/device_assignment.hpp"
#include "ojs/ml/predicates.hpp"

using namespace ojs::ml;

namespace {

// 8 GPUs, two NUMA nodes (0-3, 4-7), NVLink within each half only.
std::vector<GpuDevice> two_islands() {
  std::vector<GpuDevice> d;
  for (int i = 0; i < 8; ++i) {
    GpuDevice g{i, "GPU-" + std::to_string(i), "nvidia-h100", 80, ComputeCapability{9, 0}, i / 4, {}, true};
    for (int j = (i / 4) * 4; j < (i / 4) * 4 + 4; ++j)
      if (j != i) g.nvlink_peers.push_back(j);
    d.push_back(g);
  }
  return d;
}

GpuRequirement gpus(int n, Interconnect ic = Interconnect::any) {
  GpuRequirement r;
  r.count = n;
  r.interconnect = ic;
  return r;
}

}  // namespace

TEST(MlDeviceAssignment, TwoFourGpuJobsThenThirdRefused) {
  auto devs = two_islands();
  std::set<int> busy;
  auto a = assign_devices(devs, busy, gpus(4));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.indices, (std::vector<int>{0, 1, 2, 3}));  // one whole NUMA node
  busy.insert(a.indices.begin(), a.indices.end());
  auto b = assign_devices(devs, busy, gpus(4));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.indices, (std::vector<int>{4, 5, 6, 7}));
  busy.insert(b.indices.begin(), b.indices.end());
  auto c = assign_devices(devs, busy, gpus(4));
  EXPECT_FALSE(c.ok());
  EXPECT_TRUE(c.indices.empty());
  EXPECT_EQ(c.refusal, "insufficient free GPUs: 0 free, job needs 4");
}

TEST(MlDeviceAssignment, NvlinkCliqueRequired) {
  auto devs = two_islands();
  std::set<int> busy{0, 1, 4};  // free: 2,3 | 5,6,7
  auto a = assign_devices(devs, busy, gpus(4, Interconnect::nvlink));
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.refusal, "no NVLink clique of 4 among 5 free GPUs");
  auto b = assign_devices(devs, busy, gpus(3, Interconnect::nvlink));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.indices, (std::vector<int>{5, 6, 7}));
  auto c = assign_devices(devs, busy, gpus(4));  // without nvlink any 4 will do
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.indices.size(), 4u);
}

TEST(MlDeviceAssignment, PackFillsPartlyUsedNumaNodeSpreadUsesEmptiest) {
  auto devs = two_islands();
  std::set<int> busy{0, 1};  // node 0 has 2 free, node 1 has 4 free
  auto pack = assign_devices(devs, busy, gpus(2));
  EXPECT_EQ(pack.indices, (std::vector<int>{2, 3}));
  auto spread = assign_devices(devs, busy, gpus(2), {PlacementPolicy::spread});
  EXPECT_EQ(spread.indices, (std::vector<int>{4, 5}));
  auto three = assign_devices(devs, busy, gpus(3));  // does not fit node 0: one node still preferred
  EXPECT_EQ(three.indices, (std::vector<int>{4, 5, 6}));
}

TEST(MlDeviceAssignment, UnhealthyAndUnfitDevicesSkipped) {
  auto devs = two_islands();
  devs[0].healthy = false;
  devs[1].memory_gb = 40;
  auto r = gpus(4);
  r.memory_gb = 80;
  auto a = assign_devices(devs, {}, r);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.indices, (std::vector<int>{4, 5, 6, 7}));
  auto b = assign_devices(devs, {4, 5, 6, 7}, r);
  EXPECT_EQ(b.refusal, "insufficient free GPUs: 3 free (2 meet type/memory/compute capability), job needs 4");
}

TEST(MlDeviceAssignment, JudgeReturnsChosenDevices) {
  Capabilities caps;
  caps.accelerator = Accelerator::gpu;
  caps.devices = two_islands();
  caps.gpu = {"nvidia-h100", 8, 80, ComputeCapability{9, 0}, "nvlink"};
  Requirements req;
  req.hard.accelerator = Accelerator::gpu;
  req.hard.gpu = gpus(2, Interconnect::nvlink);
  WorkerLoad load;
  load.busy_devices = {0, 1, 2};
  auto j = judge(req, &caps, load);
  ASSERT_TRUE(j.eligible());
  EXPECT_EQ(j.devices, (std::vector<int>{4, 5}));  // pack: node 0 has 1 free, cannot hold 2
  load.busy_devices = {0, 1, 2, 4, 5, 6, 7};
  auto k = judge(req, &caps, load);
  ASSERT_FALSE(k.eligible());
  EXPECT_EQ(k.refusals[0].predicate, "free_gpus");
  EXPECT_TRUE(k.devices.empty());
}
