// parse_capabilities, fingerprints, and the shipped example worker files.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "ojs/core/error.hpp"
#include "ojs/ml/capabilities.hpp"

using nlohmann::json;
using namespace ojs::ml;

namespace {
std::pair<std::string, std::string> rejection(const json& caps) {
  try {
    parse_capabilities(caps);
  } catch (const ojs::OjsError& e) {
    return {e.details().at("field").get<std::string>(), e.details().at("rule").get<std::string>()};
  }
  return {};
}
json load(const std::string& name) {
  std::ifstream in(std::string(OJS_SOURCE_DIR) + "/examples/workers/" + name);
  return json::parse(in);
}
}  // namespace

TEST(MlCapabilities, RejectsBadValuesWithClearRules) {
  EXPECT_EQ(rejection({{"gpu", {{"count", -1}}}}), (std::pair<std::string, std::string>{"capabilities.gpu.count", "must be an integer between 0 and 1024"}));
  EXPECT_EQ(rejection({{"cpu_cores", "many"}}), (std::pair<std::string, std::string>{"capabilities.cpu_cores", "must be an integer >= 0"}));
  EXPECT_EQ(rejection({{"gpu", {{"compute_capability", "9"}}}}).first, "capabilities.gpu.compute_capability");
  EXPECT_EQ(rejection({{"labels", {{"region", 1}}}}).first, "capabilities.labels.region");
  EXPECT_EQ(rejection({{"models_loaded", {{{"model_version", "v1"}}}}}).first, "capabilities.models_loaded[0].model_id");
  EXPECT_EQ(rejection({{"devices", {{{"index", 0}}, {{"index", 0}}}}}).first, "capabilities.devices");
  EXPECT_EQ(rejection({{"devices", {{{"healthy", "yes"}}}}}).first, "capabilities.devices[0].healthy");
  EXPECT_EQ(rejection({{"gpu", {{"count", 2}}}, {"devices", {{{"index", 0}}}}}).first, "capabilities.gpu.count");
  EXPECT_EQ(rejection(json::array()).first, "capabilities");
}

TEST(MlCapabilities, DerivesAggregateFromDevicesAndLabels) {
  auto c = parse_capabilities(json{{"devices",
                                    {{{"index", 1}, {"type", "NVIDIA-H100"}, {"memory_gb", 80}, {"compute_capability", "9.0"}, {"nvlink_peers", {0}}},
                                     {{"index", 0}, {"type", "nvidia-h100"}, {"memory_gb", 94}, {"compute_capability", "9.0"}, {"nvlink_peers", {1}}}}},
                                   {"labels", {"canary", "region=us-east-1"}}});
  EXPECT_EQ(c.accelerator, Accelerator::gpu);
  EXPECT_EQ(c.gpu.count, 2);
  EXPECT_EQ(c.gpu.memory_gb, 80);
  EXPECT_EQ(c.gpu.type, "nvidia-h100");
  EXPECT_EQ(c.gpu.interconnect, "nvlink");
  EXPECT_EQ(c.devices[0].index, 0);
  EXPECT_EQ(c.labels.at("region"), "us-east-1");
  EXPECT_EQ(c.labels.at("canary"), "true");
  EXPECT_EQ(c.labels.at("gpu_count"), "2");
}

TEST(MlCapabilities, FingerprintStableAndSensitive) {
  json a = {{"gpu", {{"count", 2}, {"memory_gb", 80.0}}}, {"runtimes", {"vllm", "pytorch"}}, {"free_gpus", 1}};
  json b = {{"runtimes", {"pytorch", "vllm"}}, {"gpu", {{"memory_gb", 80}, {"count", 2}}}, {"free_gpus", 2}};
  EXPECT_EQ(fingerprint(parse_capabilities(a)), fingerprint(parse_capabilities(b)));
  EXPECT_EQ(fingerprint(parse_capabilities(a)).size(), 16u);
  b["gpu"]["memory_gb"] = 40;
  EXPECT_NE(fingerprint(parse_capabilities(a)), fingerprint(parse_capabilities(b)));
}

TEST(MlCapabilities, ExampleWorkerFilesParse) {
  const std::string dir = std::string(OJS_SOURCE_DIR) + "/examples/workers";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    EXPECT_NO_THROW(parse_capabilities(json::parse(in))) << e.path();
    ++n;
  }
  EXPECT_GE(n, 5);
  auto dgx = parse_capabilities(load("dgx-h100.json"));
  EXPECT_EQ(dgx.gpu.count, 8);
  EXPECT_EQ(dgx.devices.size(), 8u);
  EXPECT_EQ(parse_capabilities(load("tpu-v5e.json")).accelerator, Accelerator::tpu);
  EXPECT_EQ(parse_capabilities(load("cpu-node.json")).gpu.count, 0);
  EXPECT_EQ(parse_capabilities(load("l4-inference.json")).gpu.compute_capability, (ComputeCapability{8, 9}));
  EXPECT_EQ(parse_capabilities(load("4xa100-pcie.json")).gpu.interconnect, "pcie");
}

TEST(MlCapabilities, MigDevicesAndHealthReasonsParse) {
  const json body = {{"devices",
                      {{{"index", 0}, {"uuid", "GPU-0"}, {"memory_gb", 85.5}, {"healthy", false},
                        {"health_reason", "xid 79: GPU has fallen off the bus"}},
                       {{"index", 2}, {"uuid", "MIG-a"}, {"memory_gb", 10.4}, {"mig_profile", "1g.10gb"},
                        {"parent_index", 1}, {"compute_fraction", 0.142}}}}};
  const auto caps = parse_capabilities(body);
  ASSERT_EQ(caps.devices.size(), 2u);
  EXPECT_FALSE(caps.devices[0].is_mig());
  EXPECT_EQ(caps.devices[0].health_reason, "xid 79: GPU has fallen off the bus");
  EXPECT_TRUE(caps.devices[1].is_mig());
  EXPECT_EQ(caps.devices[1].mig_profile, "1g.10gb");
  EXPECT_EQ(caps.devices[1].parent_index, 1);
  EXPECT_DOUBLE_EQ(caps.devices[1].compute_fraction, 0.142);
  EXPECT_EQ(capabilities_to_json(caps)["devices"][1]["mig_profile"], "1g.10gb");
  EXPECT_DOUBLE_EQ(caps.gpu.memory_gb, 85.5);  // beside MIG devices the largest judges statically

  json bad = body;
  bad["devices"][1]["compute_fraction"] = 1.5;
  EXPECT_THROW(parse_capabilities(bad), ojs::OjsError);

  const json unhealthy = unhealthy_devices(body);
  ASSERT_EQ(unhealthy.size(), 1u);
  EXPECT_EQ(unhealthy[0], json({{"index", 0}, {"uuid", "GPU-0"}, {"reason", "xid 79: GPU has fallen off the bus"}}));
  EXPECT_EQ(unhealthy_devices(json{{"devices", "not a list"}}), json::array());
}
