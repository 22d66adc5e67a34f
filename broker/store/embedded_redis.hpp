// The embedded default: with no --redis URL the broker runs its own
// redis-server as a child process on a private unix socket, with persistence
// (AOF) in the data directory, and stops it on exit. The data directory is
// locked (broker.lock) while the broker or its redis-server lives.
#pragma once
#include <string>
#include <sys/types.h>

namespace ojs::broker {

class EmbeddedRedis {
 public:
  EmbeddedRedis(std::string binary, std::string data_dir);
  ~EmbeddedRedis();
  EmbeddedRedis(const EmbeddedRedis&) = delete;
  EmbeddedRedis& operator=(const EmbeddedRedis&) = delete;

  void start();  // throws std::runtime_error with the reason (binary missing, no ready socket)
  void stop();
  std::string url() const { return "unix://" + socket_path_; }

 private:
  std::string binary_;
  std::string data_dir_;
  std::string socket_path_;
  pid_t pid_ = -1;
  int lock_fd_ = -1;  // flock on <data dir>/broker.lock, shared with the redis-server child
  static constexpr int kLockWaitSeconds = 15;

  void lock_data_dir(const std::string& dir);
};

}  // namespace ojs::broker
