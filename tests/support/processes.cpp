#include "support/processes.hpp"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace ojs::test {

namespace fs = std::filesystem;

std::uint16_t free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string make_temp_dir(const std::string& tag) {
  std::string pattern = (fs::temp_directory_path() / ("ojs-" + tag + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

namespace {

pid_t spawn(const std::vector<std::string>& args, int stdout_fd) {
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a crashed test never leaves servers behind
    if (stdout_fd >= 0) {
      dup2(stdout_fd, STDOUT_FILENO);
    }
    std::vector<char*> argv;
    for (auto s : args) argv.push_back(strdup(s.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// Sends `sig`, waits up to `wait_ms` for the exit, then SIGKILL; the wait status.
int terminate(pid_t& pid, int sig, int wait_ms = 5000) {
  if (pid <= 0) return -1;
  ::kill(pid, sig);
  int status = 0;
  for (int waited = 0; waited < wait_ms; waited += 25) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ::kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  pid = -1;
  return status;
}

bool redis_ready(std::uint16_t port) {
  redisContext* c = redisConnect("127.0.0.1", port);
  if (!c) return false;
  bool ok = false;
  if (!c->err) {
    auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
    ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
  }
  redisFree(c);
  return ok;
}

}  // namespace

std::string binary_path(const std::string& relative) { return std::string(OJS_BINARY_DIR) + "/" + relative; }

namespace {
// redis-server exited because another process took its port between free_port()
// and its bind (its log says so): the constructor draws another port.
struct PortTaken : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string tail_of(const std::string& path, std::size_t bytes) {
  const auto text = read_file(path);
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}
}  // namespace

std::string lua_source(const std::string& file) { return read_file((fs::path(OJS_SOURCE_DIR) / "broker/store/lua" / file).string()); }

RedisServer::RedisServer() : dir_(make_temp_dir("redis")) {
  for (int attempt = 1;; ++attempt) {
    port_ = free_port();
    try {
      start();
      return;
    } catch (const PortTaken&) {
      if (attempt == 5) throw;
    }
  }
}
RedisServer::~RedisServer() {
  stop();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void RedisServer::start() {
  pid_ = spawn({"redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                "no", "--dir", dir_, "--logfile", dir_ + "/redis.log"},
               -1);
  // Ready when it answers; given up when it exits, or after 20 s (a loaded machine).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool exited = false;
  while (!exited && std::chrono::steady_clock::now() <= deadline) {
    if (redis_ready(port_)) return;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      exited = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
  terminate(pid_, SIGKILL);  // (a thrown constructor runs no destructor)
  const auto log = tail_of(dir_ + "/redis.log", 600);
  const std::string what = "redis-server did not start on port " + std::to_string(port_) + (exited ? " (it exited)" : " in 20 s") +
                           "; its log ends: " + log;
  if (exited && log.find("Address already in use") != std::string::npos) throw PortTaken(what);
  throw std::runtime_error(what);
}

void RedisServer::stop() { terminate(pid_, SIGTERM); }
void RedisServer::kill9() { terminate(pid_, SIGKILL); }

BrokerProcess::BrokerProcess(const std::string& redis_url, std::vector<std::string> extra_args) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> args{binary_path("broker/broker"), "--redis", redis_url, "--port", "0", "--log-level", "warn"};
  // A fast maintenance pass (promoter, reaper) unless the test sets its own.
  if (std::find(extra_args.begin(), extra_args.end(), "--maintenance-interval-ms") == extra_args.end())
    for (const char* a : {"--maintenance-interval-ms", "50"}) args.push_back(a);
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  // OJS_TEST_BROKER_ARGS (space-separated) runs every test's broker with more flags: the
  // whole suite against another setting (e.g. "--fetch-walk-min-classes 0").
  if (const char* more = std::getenv("OJS_TEST_BROKER_ARGS")) {
    std::istringstream words(more);
    for (std::string w; words >> w;) args.push_back(w);
  }
  // Every multi-key Redis call must be single-slot, even on one Redis: a cluster refuses the others.
  setenv("OJS_REDIS_CHECK_SLOTS", "1", 1);
  pid_ = spawn(args, fds[1]);
  close(fds[1]);
  // The broker prints "OJS_BROKER_READY port=N" once it listens.
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char buf[256];
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
      const auto at = out.find("OJS_BROKER_READY port=");
      if (at != std::string::npos && out.find('\n', at) != std::string::npos) {
        port_ = static_cast<std::uint16_t>(std::stoi(out.substr(at + 22)));
        break;
      }
    }
  }
  close(fds[0]);
  if (port_ == 0) {
    terminate(pid_, SIGKILL);
    throw std::runtime_error("broker did not become ready: " + out);
  }
}

BrokerProcess::~BrokerProcess() { stop(); }
void BrokerProcess::stop() { terminate(pid_, SIGTERM); }
void BrokerProcess::kill9() { terminate(pid_, SIGKILL); }
int BrokerProcess::signal_and_wait(int sig, int wait_ms) { return terminate(pid_, sig, wait_ms); }

RunResult run_process(const std::vector<std::string>& argv, int timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);  // else daemons the child starts keep the pipe open and the reader never sees EOF
    std::vector<char*> args;
    for (const auto& s : argv) args.push_back(strdup(s.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  RunResult result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (true) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, 200) > 0) {
      char buf[4096];
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      result.output.append(buf, static_cast<size_t>(n));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      result.output += "\n[killed after timeout]";
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::vector<std::string> redis_lines(const RedisServer& redis, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"redis-cli", "-p", std::to_string(redis.port())});
  std::istringstream out(run_process(argv, 10).output);
  std::vector<std::string> lines;
  for (std::string line; std::getline(out, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::string redis_value(const RedisServer& redis, std::vector<std::string> argv) {
  const auto lines = redis_lines(redis, std::move(argv));
  return lines.empty() ? std::string() : lines.front();
}

Api::Api(const std::string& base_url, const std::string& token)
    : client_(HttpClientOptions{base_url, token, 30000, "", false}) {}

Api::Reply Api::call(const std::string& method, const std::string& path, const nlohmann::json& body) {
  auto r = client_.request(method, path, body.is_null() ? std::string() : body.dump());
  Reply reply{r.status, nlohmann::json::parse(r.body, nullptr, false)};
  return reply;
}

std::string Api::push(const nlohmann::json& job) {
  auto r = post("/ojs/v1/jobs", job);
  EXPECT_EQ(r.status, 201) << r.body.dump();
  if (r.status != 201) return {};
  return r.body["job"]["id"].get<std::string>();
}

nlohmann::json Api::fetch(const std::vector<std::string>& queues, const std::string& worker_id, int count,
                          const nlohmann::json& extra) {
  nlohmann::json body = extra;
  body["queues"] = queues;
  body["worker_id"] = worker_id;
  body["count"] = count;
  auto r = post("/ojs/v1/workers/fetch", body);
  EXPECT_EQ(r.status, 200) << r.body.dump();
  return r.body.is_object() && r.body.contains("jobs") ? r.body["jobs"] : nlohmann::json::array();
}

bool wait_until(const std::function<bool()>& condition, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return condition();
}

std::string token_sha256(const std::string& token) {
  return run_process({"sh", "-c", "printf %s '" + token + "' | sha256sum"}, 10).output.substr(0, 64);
}

nlohmann::json wait_for_state(Api& api, const std::string& job_id, const std::string& state, int timeout_ms) {
  nlohmann::json job;
  for (int waited = 0; waited < timeout_ms; waited += 100) {
    job = api.get("/ojs/v1/jobs/" + job_id).body["job"];
    if (job["state"] == state) return job;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return job;
}

}  // namespace ojs::test
