// A real 6-node Redis Cluster on free loopback ports (scripts/redis-cluster.sh),
// started once per test suite and stopped after it.
#pragma once
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <stdexcept>
#include <string>

#include "broker/store/redis_client.hpp"
#include "support/processes.hpp"

namespace ojs::broker::cluster {

inline bool port_free(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

// Six client ports and their cluster-bus ports (+10000), all free.
inline int free_base_port() {
  std::mt19937 rng(std::random_device{}());
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int base = 20000 + static_cast<int>(rng() % 20000);
    bool ok = true;
    for (int i = 0; i < 6 && ok; ++i) ok = port_free(base + i) && port_free(base + i + 10000);
    if (ok) return base;
  }
  throw std::runtime_error("no six consecutive free ports found");
}

class RealCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = test::make_temp_dir("cluster");
    base_ = free_base_port();
    const auto r = test::run_process({std::string(OJS_SOURCE_DIR) + "/scripts/redis-cluster.sh", "start", dir_, std::to_string(base_)}, 120);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() {
    test::run_process({std::string(OJS_SOURCE_DIR) + "/scripts/redis-cluster.sh", "stop", dir_}, 60);
  }
  static std::string seeds() { return "redis-cluster://127.0.0.1:" + std::to_string(base_) + ",127.0.0.1:" + std::to_string(base_ + 1); }
  static RedisEndpoint node(int port) {
    RedisEndpoint ep;
    ep.port = port;
    return ep;
  }
  static inline std::string dir_;
  static inline int base_ = 0;
};

}  // namespace ojs::broker::cluster
