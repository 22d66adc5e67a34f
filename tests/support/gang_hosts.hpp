// The hosts the elastic gang tests simulate: worker n is a 4 x A100 host
// (examples/workers/4xa100-pcie.json) that advertises its rendezvous at 10.0.0.<n>:29500.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "support/ml_fixtures.hpp"

namespace ojs::test {

// A FETCH body's {capabilities} of host n.
inline nlohmann::json a100_host(int n) {
  nlohmann::json caps = example_worker("4xa100-pcie");
  caps["labels"]["rendezvous.ojs.io/address"] = "10.0.0." + std::to_string(n);
  caps["labels"]["rendezvous.ojs.io/port"] = "29500";
  return {{"capabilities", caps}};
}

}  // namespace ojs::test
