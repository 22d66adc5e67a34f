// assign_devices: all or none, NVLink cliques, NUMA preference, health.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ojs/ml/device_assignment.hpp"
#include "ojs/ml/predicates.hpp"
#include "ojs/ml/requirements.hpp"

using namespace ojs::ml;
using nlohmann::json;

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
  EXPECT_EQ(b.refusal, "insufficient free GPUs: 3 free (2 meet type/memory/compute capability), job needs 4 (1 unhealthy)");
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

namespace {

// GPU 0 whole (80 GB); GPU 1 split into 3g.40gb (index 2) and two 1g.10gb (3, 4).
std::vector<GpuDevice> mig_worker() {
  auto slice = [](int index, const char* uuid, const char* profile, double memory, double fraction) {
    GpuDevice d{index, uuid, "nvidia-h100", memory, ComputeCapability{9, 0}, 0, {}, true};
    d.mig_profile = profile;
    d.parent_index = 1;
    d.compute_fraction = fraction;
    return d;
  };
  return {GpuDevice{0, "GPU-0", "nvidia-h100", 85.5, ComputeCapability{9, 0}, 0, {}, true},
          slice(2, "MIG-big", "3g.40gb", 42.4, 0.428), slice(3, "MIG-s1", "1g.10gb", 10.4, 0.142),
          slice(4, "MIG-s2", "1g.10gb", 10.4, 0.142)};
}

GpuRequirement gpu_with_memory(int n, double gb) {
  GpuRequirement r = gpus(n);
  r.memory_gb = gb;
  return r;
}

}  // namespace

TEST(MlDeviceAssignment, MigSliceIsADeviceOfItsMemoryAndTheSmallestThatFitsGoesFirst) {
  const auto devs = mig_worker();
  std::set<int> busy;
  auto a = assign_devices(devs, busy, gpu_with_memory(1, 10));
  ASSERT_TRUE(a.ok()) << a.refusal;
  EXPECT_EQ(a.indices, (std::vector<int>{3}));  // a 1g.10gb slice, not the whole GPU
  busy.insert(3);
  EXPECT_EQ(assign_devices(devs, busy, gpu_with_memory(1, 10)).indices, (std::vector<int>{4}));
  busy.insert(4);
  EXPECT_EQ(assign_devices(devs, busy, gpu_with_memory(1, 10)).indices, (std::vector<int>{2}));  // then 3g.40gb
  EXPECT_EQ(assign_devices(devs, {}, gpu_with_memory(1, 40)).indices, (std::vector<int>{2}));
  EXPECT_EQ(assign_devices(devs, {}, gpu_with_memory(1, 80)).indices, (std::vector<int>{0}));  // only the whole GPU
}

TEST(MlDeviceAssignment, MigSlicesTakeOnlySingleGpuJobs) {
  const auto devs = mig_worker();
  auto a = assign_devices(devs, {}, gpus(2));
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.refusal, "insufficient free GPUs: 4 free (1 meet type/memory/compute capability), job needs 2");
}

TEST(MlDeviceAssignment, RefusalCountsUnhealthyDevices) {
  auto devs = mig_worker();
  devs[0].healthy = false;
  devs[0].health_reason = "xid 79: GPU has fallen off the bus";
  auto a = assign_devices(devs, {}, gpu_with_memory(1, 80));
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.refusal, "insufficient free GPUs: 3 free (0 meet type/memory/compute capability), job needs 1 (1 unhealthy)");
}

TEST(MlDeviceAssignment, VisibleDeviceIdsAreMigUuidsOrIndices) {
  EXPECT_EQ(visible_device_ids(mig_worker(), {0}), (std::vector<std::string>{"0"}));
  EXPECT_EQ(visible_device_ids(mig_worker(), {3}), (std::vector<std::string>{"MIG-s1"}));
  EXPECT_EQ(visible_device_ids({}, {5}), (std::vector<std::string>{"5"}));  // unknown device: its index
}

TEST(MlDeviceAssignment, MpsSharedDeviceTakesUpToMaxJobs) {
  const json body = {{"devices",
                      {{{"index", 0}, {"memory_gb", 80}, {"sharing", "mps"}, {"mps_active_thread_percentage", 50}, {"max_jobs", 2}},
                       {{"index", 1}, {"memory_gb", 80}}}},
                     {"labels", {{"nvidia.com/gpu.sharing", "mps"}}}};
  const auto caps = parse_capabilities(body);
  Requirements req = parse_requirements({{"ext_ml_gpu_count", 1}});
  WorkerLoad load;
  load.hold({0});
  load.hold({1});
  auto j = judge(req, &caps, load);  // device 1 is exclusive and busy; device 0 has room for one more
  ASSERT_TRUE(j.eligible());
  EXPECT_EQ(j.devices, (std::vector<int>{0}));
  load.hold({0});
  EXPECT_FALSE(judge(req, &caps, load).eligible());  // two jobs on the MPS device: full
  WorkerLoad uncounted;
  uncounted.busy_devices = {0, 1};  // busy without a count (e.g. held for a preemptor): stays busy
  EXPECT_FALSE(judge(req, &caps, uncounted).eligible());

  // Jobs avoid (or require) MPS through the advertised label.
  const auto avoid = parse_requirements(
      {{"ext_ml_gpu_count", 1},
       {"ext_ml_affinity", {{"required", {{{"key", "nvidia.com/gpu.sharing"}, {"operator", "NotIn"}, {"values", {"mps"}}}}}}}});
  const auto refused = judge(avoid, &caps, WorkerLoad{});
  ASSERT_FALSE(refused.eligible());
  EXPECT_EQ(refused.refusals[0].predicate, "required_affinity");
  const auto require = parse_requirements({{"ext_ml_gpu_count", 1}, {"ext_ml_node_selector", {{"nvidia.com/gpu.sharing", "mps"}}}});
  EXPECT_TRUE(judge(require, &caps, WorkerLoad{}).eligible());
}

TEST(MlDeviceAssignment, SharedDeviceMemoryNeverOversubscribed) {
  const json body = {{"devices",
                      {{{"index", 0}, {"memory_gb", 85.5}, {"sharing", "mps"}, {"mps_active_thread_percentage", 50}, {"max_jobs", 2}},
                       {{"index", 3}, {"memory_gb", 10.4}, {"mig_profile", "1g.10gb"}, {"parent_index", 1},
                        {"compute_fraction", 0.142}, {"sharing", "mps"}, {"mps_active_thread_percentage", 50}, {"max_jobs", 2}}}}};
  const auto caps = parse_capabilities(body);
  const auto need = [](double gb) { return parse_requirements({{"ext_ml_gpu_count", 1}, {"ext_ml_gpu_memory_gb", gb}}); };
  WorkerLoad load;
  load.hold({0}, 80.0);
  EXPECT_FALSE(judge(need(80), &caps, load).eligible());  // 160 GB on 85.5
  EXPECT_EQ(judge(need(5), &caps, load).devices, (std::vector<int>{3}));  // best fit first: the slice
  load.hold({3}, 10.0);
  EXPECT_EQ(judge(need(5), &caps, load).devices, (std::vector<int>{0}));  // 15 GB on the 10.4 GB slice: no; 85 GB on device 0: yes
  EXPECT_FALSE(judge(need(6), &caps, load).eligible());
  // A job that declares nothing is charged the fair share (memory / max_jobs).
  WorkerLoad undeclared;
  undeclared.hold({0});
  EXPECT_EQ(judge(need(42.75), &caps, undeclared).devices, (std::vector<int>{0}));
  EXPECT_FALSE(judge(need(43), &caps, undeclared).eligible());
  EXPECT_DOUBLE_EQ(memory_charge_gb(caps.devices[0], std::nullopt), 42.75);
  // What a GPU-memory budget charges: an MPS share its declared memory, else the fair
  // share; a MIG slice (max_jobs 2 here: MPS on the slice) the same rule on its own memory;
  // no device list: declared x count.
  EXPECT_EQ(gpu_memory_charge_mb(caps.devices, {0}, 30.0, 1), 30000);
  EXPECT_EQ(gpu_memory_charge_mb(caps.devices, {0}, std::nullopt, 1), 42750);
  EXPECT_EQ(gpu_memory_charge_mb(caps.devices, {3}, std::nullopt, 1), 5200);
  EXPECT_EQ(gpu_memory_charge_mb({}, {}, 20.0, 2), 40000);
  EXPECT_EQ(gpu_memory_charge_mb({}, {}, std::nullopt, 2), 0);
  EXPECT_EQ(gpu_memory_mb(85.5), 85500);
  EXPECT_DOUBLE_EQ(gpu_memory_gb(10400), 10.4);
  // A drained device is never available, shared or not.
  WorkerLoad drained;
  drained.drained_devices = {0, 3};
  EXPECT_FALSE(judge(need(1), &caps, drained).eligible());
}
