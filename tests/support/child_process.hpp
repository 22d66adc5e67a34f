// A child process for integration tests (a worker agent, ...): started with
// extra environment variables, stopped with SIGTERM (so it drains) and reaped
// by the destructor, so a failing test never leaks it.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
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
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

 private:
  pid_t pid_ = -1;
};

}  // namespace ojs::test
