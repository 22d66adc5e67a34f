// One job process: spawned in its own process group (so a shell and everything
// it starts can be signalled together), stdio wired to files (no pipes that
// could fill up and stall the job), reaped without blocking.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace ojs::worker {

struct ExitStatus {
  bool signaled = false;
  int code = 0;    // exit code when !signaled
  int signal = 0;  // terminating signal when signaled
};

struct SpawnRequest {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::string> env;   // complete environment, "NAME=value"
  std::string cwd;
  std::string stdin_path;
  std::string stdout_path;
  std::string stderr_path;
};

class ChildProcess {
 public:
  // Throws std::system_error when the program cannot be started.
  static ChildProcess spawn(const SpawnRequest& request);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills and reaps a child that is still running: no orphans, no zombies.
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  bool running() const { return !exit_status_; }
  const std::optional<ExitStatus>& exit_status() const { return exit_status_; }

  std::optional<ExitStatus> try_wait();
  ExitStatus wait();
  // Signals the whole process group, also after the child itself has exited while
  // others of its group live on (a shell's job running a TERM trap).
  void signal_group(int signal_number);
  // Whether any process of the child's group is still there (zombies included).
  bool group_alive() const;

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<ExitStatus> exit_status_;
};

}  // namespace ojs::worker
