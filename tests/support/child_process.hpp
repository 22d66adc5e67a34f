// A child process for integration tests (a worker agent, ...): started with
// extra environment variables, stopped with SIGTERM (so it drains) and reaped
// by the destructor, so a failing test never leaks it.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace ojs::test {

class ChildProcess {
 public:
  explicit ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {}) {
    pid_ = fork();
    if (pid_ == 0) {
      for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(strdup(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~ChildProcess() {
    if (pid_ <= 0) return;  // already reaped by exited_within
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  // Whether the process exits on its own within `limit` (reaped then); its exit status in *status.
  bool exited_within(std::chrono::milliseconds limit, int* status = nullptr) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int raw = 0;
    while (waitpid(pid_, &raw, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
    if (status) *status = raw;
    return true;
  }
  // Sends a signal (SIGKILL: the process dies without draining).
  void signal(int signal_number) {
    if (pid_ > 0) ::kill(pid_, signal_number);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

 private:
  pid_t pid_ = -1;
};

}  // namespace ojs::test
