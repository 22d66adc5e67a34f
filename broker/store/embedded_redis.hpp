// The embedded default: with no --redis URL the broker runs its own
// redis-server as a child process on a private unix socket, with persistence
// (AOF) in the data directory, and stops it on exit. The data directory is
// locked (broker.lock) while the broker or its redis-server lives.
//
// Supervised: a redis-server that dies (kill -9, OOM killer, crash) is reaped and
// started again from its AOF, after a backoff (250 ms, doubling); when it cannot be
// kept running (kMaxRestarts restarts within kRestartWindow) the broker exits with
// kExitRedisLost rather than answer 503 forever (docs/operations.md).
#pragma once
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace ojs::broker {

class EmbeddedRedis {
 public:
  static constexpr int kMaxRestarts = 5;
  static constexpr std::chrono::seconds kRestartWindow{60};
  static constexpr int kExitRedisLost = 3;
  // The embedded server's hash-max-listpack-value and -entries: a waiting job's hash
  // (its document fits, at most 12 fields) is a listpack, about half the memory of a
  // hashtable; a claimed job's (its attempt adds ~6 fields) becomes a hashtable once,
  // so the ACK's 24-field read stays O(1) a field (docs/operations.md "Redis memory per job").
  static constexpr int kHashListpackValue = 2048;
  static constexpr int kHashListpackEntries = 12;
  // zset-max-listpack-entries: a sorted set past 16 members (a ready set, the finished
  // index) is a skiplist. A listpack insert walks the set parsing every score: 128 (the
  // default) made each finished-index insert ~26k instructions, 16 ~5k, and a claim
  // ~22k dearer (bench/lua-callgrind.sh ZSET_LISTPACK_ENTRIES).
  static constexpr int kZsetListpackEntries = 16;

  EmbeddedRedis(std::string binary, std::string data_dir);
  ~EmbeddedRedis();
  EmbeddedRedis(const EmbeddedRedis&) = delete;
  EmbeddedRedis& operator=(const EmbeddedRedis&) = delete;

  void start();  // throws std::runtime_error with the reason (binary missing, no ready socket); then supervises
  void stop();
  std::string url() const { return "unix://" + socket_path_; }

 private:
  std::string binary_;
  std::string data_dir_;
  std::string socket_path_;
  std::string log_path_;
  pid_t pid_ = -1;
  int lock_fd_ = -1;  // flock on <data dir>/broker.lock, shared with the redis-server child
  static constexpr int kLockWaitSeconds = 15;
  std::mutex mutex_;  // pid_ and stopping_, between the supervisor and stop()
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread supervisor_;

  void lock_data_dir(const std::string& dir);
  void launch();          // forks redis-server and waits until it answers PING
  void terminate_child(); // SIGTERM (AOF flush), SIGKILL after 5 s; reaps it
  void supervise();
};

}  // namespace ojs::broker
