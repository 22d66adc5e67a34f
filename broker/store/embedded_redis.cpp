#include "broker/store/embedded_redis.hpp"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ojs::broker {

namespace fs = std::filesystem;

EmbeddedRedis::EmbeddedRedis(std::string binary, std::string data_dir)
    : binary_(std::move(binary)), data_dir_(std::move(data_dir)) {}

// The data dir belongs to one broker and its redis-server: an exclusive flock on
// <dir>/broker.lock, inherited by the redis-server child, so it is held until
// both are gone. A broker restarted right after a SIGKILL waits for the old
// redis-server to finish exiting (it would unlink the new one's socket, and two
// servers would write one AOF); a second live broker is refused.
void EmbeddedRedis::lock_data_dir(const std::string& dir) {
  const std::string path = dir + "/broker.lock";
  lock_fd_ = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);  // no O_CLOEXEC: redis-server inherits it
  if (lock_fd_ < 0) throw std::runtime_error("cannot open lock file " + path);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kLockWaitSeconds);
  bool said = false;
  while (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::close(lock_fd_);
      lock_fd_ = -1;
      throw std::runtime_error("data dir " + dir + " is in use by another broker or its redis-server (lock " + path +
                               " held for " + std::to_string(kLockWaitSeconds) + " s); stop it or choose another --data-dir");
    }
    if (!said) spdlog::warn("data dir {} is locked by another broker or its exiting redis-server; waiting", dir);
    said = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void EmbeddedRedis::start() {
  fs::create_directories(data_dir_);
  const fs::path dir = fs::absolute(data_dir_);
  socket_path_ = (dir / "redis.sock").string();
  if (socket_path_.size() > 100) throw std::runtime_error("data dir path too long for a unix socket: " + socket_path_);
  if (lock_fd_ < 0) lock_data_dir(dir.string());
  log_path_ = (dir / "redis.log").string();
  launch();
  if (!supervisor_.joinable()) supervisor_ = std::thread([this] { supervise(); });
}

void EmbeddedRedis::launch() {
  const fs::path dir = fs::absolute(data_dir_);
  std::error_code ec;
  fs::remove(socket_path_, ec);
  const std::string& log = log_path_;
  std::vector<std::string> args{binary_, "--port", "0", "--unixsocket", socket_path_, "--unixsocketperm", "700",
                                "--dir", dir.string(), "--appendonly", "yes", "--appendfsync", "everysec",
                                "--save", "", "--daemonize", "no", "--logfile", log, "--protected-mode", "yes",
                                "--hash-max-listpack-value", std::to_string(kHashListpackValue),
                                "--hash-max-listpack-entries", std::to_string(kHashListpackEntries),
                                "--zset-max-listpack-entries", std::to_string(kZsetListpackEntries)};
  std::vector<char*> argv;  // built before fork: the child of a threaded process must not allocate
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed while starting redis-server");
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the broker
    // The broker blocks SIGTERM/SIGINT to sigwait for them; exec keeps the mask,
    // so unblock here or redis-server would ignore our SIGTERM (and skip its
    // orderly AOF flush).
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  // Ready when the socket answers PING.
  for (int i = 0; i < 200; ++i) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server exited during start-up (status " + std::to_string(status) +
                               "); is '" + binary_ + "' installed? see " + log);
    }
    if (redisContext* c = redisConnectUnix(socket_path_.c_str()); c) {
      const bool ok = !c->err;
      if (ok) {
        auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
        const bool pong = reply && reply->type == REDIS_REPLY_STATUS;
        if (reply) freeReplyObject(reply);
        redisFree(c);
        if (pong) {
          spdlog::info("embedded redis-server (pid {}) ready on {}", pid_, socket_path_);
          return;
        }
      } else {
        redisFree(c);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  terminate_child();
  throw std::runtime_error("redis-server did not become ready within 10 s; see " + log);
}

// A redis-server that exits while the broker runs is reaped (no zombie) and
// started again from its AOF, with a doubling backoff; too many restarts in the
// window and the broker exits non-zero (a supervisor such as systemd restarts it).
void EmbeddedRedis::supervise() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mutex_);
  int restarts = 0;
  auto window = Clock::now();
  while (!stopping_) {
    if (wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopping_; })) break;
    if (pid_ > 0) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) != pid_) continue;  // still running
      spdlog::error("embedded redis-server (pid {}) exited unexpectedly ({} {}); restarting it from its AOF", pid_,
                    WIFSIGNALED(status) ? "signal" : "status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      pid_ = -1;
    }
    if (Clock::now() - window > kRestartWindow) {
      restarts = 0;
      window = Clock::now();
    }
    if (restarts >= kMaxRestarts) {
      spdlog::critical("embedded redis-server could not be kept running ({} restarts within {} s; see {}); the broker exits",
                       restarts, kRestartWindow.count(), log_path_);
      spdlog::default_logger()->flush();
      std::_Exit(kExitRedisLost);
    }
    const auto backoff = std::chrono::milliseconds(250) * (1 << restarts);
    ++restarts;
    if (wake_.wait_for(lock, backoff, [this] { return stopping_; })) break;
    try {
      launch();
      spdlog::warn("embedded redis-server restarted (pid {}, restart {} within {} s)", pid_, restarts, kRestartWindow.count());
    } catch (const std::exception& e) {
      spdlog::error("restarting the embedded redis-server failed: {}", e.what());
    }
  }
}

void EmbeddedRedis::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (supervisor_.joinable()) supervisor_.join();
  terminate_child();
}

void EmbeddedRedis::terminate_child() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);  // redis flushes the AOF on SIGTERM
  int status = 0;
  for (int i = 0; i < 100; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

EmbeddedRedis::~EmbeddedRedis() {
  stop();
  if (lock_fd_ >= 0) ::close(lock_fd_);  // after redis-server has exited
}

}  // namespace ojs::broker
