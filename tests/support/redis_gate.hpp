// A TCP relay between a broker and its Redis that can hold back one command, so a
// test can order two requests' Redis calls exactly (no sleeps): arm it with a
// pattern, and the first chunk a client sends that contains it waits, unsent,
// until the test releases it. Everything else passes through unchanged.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ojs::test {

class RedisGate {
 public:
  explicit RedisGate(std::uint16_t redis_port);
  ~RedisGate();
  RedisGate(const RedisGate&) = delete;
  RedisGate& operator=(const RedisGate&) = delete;

  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  // Holds the next client chunk containing `pattern` (RESP bytes: an FCALL names
  // its function "\r\n<script>_<hash>").
  void hold(const std::string& pattern);
  // Waits until a chunk is held; false after timeout_ms.
  bool wait_held(int timeout_ms);
  // Sends the held chunk on (and disarms).
  void release();

 private:
  void accept_loop();
  void relay(int client, int server);

  std::uint16_t redis_port_;
  std::uint16_t port_ = 0;
  int listener_ = -1;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string pattern_;
  bool armed_ = false, held_ = false, released_ = false;
  std::vector<int> fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

}  // namespace ojs::test
