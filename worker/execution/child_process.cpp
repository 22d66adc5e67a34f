#include "worker/execution/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <system_error>

namespace ojs::worker {

namespace {

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

ExitStatus decode(int status) {
  if (WIFSIGNALED(status)) return ExitStatus{true, 0, WTERMSIG(status)};
  return ExitStatus{false, WEXITSTATUS(status), 0};
}

// RAII for the posix_spawn helper objects.
struct SpawnSetup {
  posix_spawn_file_actions_t actions{};
  posix_spawnattr_t attributes{};
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
};

}  // namespace

ChildProcess ChildProcess::spawn(const SpawnRequest& request) {
  if (request.argv.empty()) throw std::system_error(EINVAL, std::generic_category(), "empty command");
  SpawnSetup setup;
  posix_spawn_file_actions_addopen(&setup.actions, 0, request.stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&setup.actions, 1, request.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&setup.actions, 2, request.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!request.cwd.empty()) posix_spawn_file_actions_addchdir_np(&setup.actions, request.cwd.c_str());

  // Own process group; default signal dispositions and an empty mask, whatever
  // the agent itself blocks or ignores (it handles SIGTERM/SIGINT).
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT}) sigaddset(&defaults, sig);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigdefault(&setup.attributes, &defaults);
  posix_spawnattr_setsigmask(&setup.attributes, &empty);
  posix_spawnattr_setpgroup(&setup.attributes, 0);
  posix_spawnattr_setflags(&setup.attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  auto argv = c_strings(request.argv);
  auto env = c_strings(request.env);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &setup.actions, &setup.attributes, argv.data(), env.data());
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "cannot start " + request.argv[0]);
  return ChildProcess(pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), exit_status_(std::move(other.exit_status_)) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    this->~ChildProcess();
    pid_ = other.pid_;
    exit_status_ = std::move(other.exit_status_);
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exit_status_) {
    signal_group(SIGKILL);
    wait();
  }
}

std::optional<ExitStatus> ChildProcess::try_wait() {
  if (exit_status_ || pid_ <= 0) return exit_status_;
  int status = 0;
  const pid_t rc = waitpid(pid_, &status, WNOHANG);
  if (rc == pid_) exit_status_ = decode(status);
  return exit_status_;
}

ExitStatus ChildProcess::wait() {
  while (!exit_status_ && pid_ > 0) {
    int status = 0;
    const pid_t rc = waitpid(pid_, &status, 0);
    if (rc == pid_) exit_status_ = decode(status);
    else if (rc < 0 && errno != EINTR) exit_status_ = ExitStatus{true, 0, SIGKILL};  // already reaped elsewhere
  }
  return exit_status_.value_or(ExitStatus{});
}

void ChildProcess::signal_group(int signal_number) {
  if (pid_ <= 0) return;
  // The group id is the child's pid (setpgroup 0); the id stays taken while any member
  // lives, so it is safe after the child exited. Fall back to the child alone in the
  // short window before the group exists.
  if (kill(-pid_, signal_number) != 0 && !exit_status_) kill(pid_, signal_number);
}

bool ChildProcess::group_alive() const { return pid_ > 0 && kill(-pid_, 0) == 0; }

}  // namespace ojs::worker
