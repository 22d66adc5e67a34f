#include "worker/discovery/gpu_mapping.hpp"
#include "worker/discovery/nvml_loader.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace ojs::worker {
namespace {

TEST(NvmlLoader, MissingLibraryMeansNoGpusAndSaysWhy) {
  const auto result = load_nvml_inventory("libnvidia-ml-not-installed.so.1");
  EXPECT_FALSE(result.inventory.has_value());
  EXPECT_NE(result.unavailable_reason.find("libnvidia-ml-not-installed"), std::string::npos);
}

// Builds tests/fixtures/nvml/fake_libnvidia_ml.c into a shared object and loads
// it through the same dlopen path as the real driver library.
TEST(NvmlLoader, ReadsRawValuesThroughDlopen) {
  testing::ScratchDir dir("nvml");
  const auto library = dir.path() / "libnvidia-ml.so.1";
  const std::string compile = "cc -shared -fPIC -o '" + library.string() + "' '" +
                              testing::fixture_path("nvml/fake_libnvidia_ml.c").string() + "' 2>&1";
  if (std::system(compile.c_str()) != 0) GTEST_SKIP() << "no C compiler to build the fake NVML library";

  const auto result = load_nvml_inventory(library.string());
  ASSERT_TRUE(result.inventory.has_value()) << result.unavailable_reason;
  const auto& inventory = *result.inventory;
  EXPECT_EQ(inventory.driver_version, "550.54.15");
  EXPECT_EQ(inventory.cuda_driver_version, 12040);
  ASSERT_EQ(inventory.gpus.size(), 2u);
  const auto& gpu = inventory.gpus[1];
  EXPECT_EQ(gpu.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu.uuid, "GPU-fake-1");
  EXPECT_EQ(gpu.memory_total_bytes, 85520809984ULL);
  EXPECT_EQ(gpu.cuda_compute_capability, (std::array<int, 2>{9, 0}));
  EXPECT_EQ(canonical_pci_bus_id(gpu.pci_bus_id), "0000:2a:00.0");
  ASSERT_EQ(gpu.nvlinks.size(), 18u);
  EXPECT_TRUE(gpu.nvlinks[3].active);
  EXPECT_EQ(gpu.nvlinks[3].remote_device_type, "switch");
  EXPECT_EQ(gpu.nvlinks[3].remote_pci_bus_id, "00000000:08:00.0");
  EXPECT_FALSE(gpu.nvlinks[4].active);
  EXPECT_EQ(gpu.ecc_uncorrected_volatile, 5);
  EXPECT_EQ(inventory.gpus[0].ecc_uncorrected_volatile, 0);

  const auto caps = map_gpu_inventory(inventory);
  EXPECT_EQ(caps.devices[0]["nvlink_peers"], nlohmann::json({1}));  // same NVSwitch fabric
  EXPECT_EQ(caps.gpu["interconnect"], "pcie");  // only one healthy GPU is left to link
  EXPECT_TRUE(caps.devices[0]["healthy"].get<bool>());
  EXPECT_FALSE(caps.devices[1]["healthy"].get<bool>());
}

}  // namespace
}  // namespace ojs::worker
