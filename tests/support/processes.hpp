// Real processes for integration tests: a redis-server on a free loopback port
// and broker processes started from the build tree. Each is stopped by its
// destructor, so a failing test never leaks a server.
#pragma once
#include <nlohmann/json.hpp>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ojs/client/http_client.hpp"

namespace ojs::test {

std::uint16_t free_port();
std::string make_temp_dir(const std::string& tag);

class RedisServer {
 public:
  RedisServer();  // starts on a free port with a private dir
  ~RedisServer();
  void start();
  void stop();   // SIGTERM and wait
  void kill9();  // crash it
  pid_t pid() const { return pid_; }  // to stall it (SIGSTOP)
  std::uint16_t port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  std::uint16_t port_;
  std::string dir_;
  pid_t pid_ = -1;
};

class BrokerProcess {
 public:
  BrokerProcess(const std::string& redis_url, std::vector<std::string> extra_args = {});
  ~BrokerProcess();
  void stop();
  void kill9();
  pid_t pid() const { return pid_; }
  // Sends `sig` and waits up to `wait_ms` for the broker to exit (then SIGKILL); the waitpid status.
  int signal_and_wait(int sig, int wait_ms);
  std::uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

// Starts any binary, waits for it; returns exit status and captured output.
struct RunResult {
  int exit_code = -1;
  std::string output;
};
RunResult run_process(const std::vector<std::string>& argv, int timeout_s = 600);

// A redis-cli command against the test Redis; its output's non-empty lines.
std::vector<std::string> redis_lines(const RedisServer& redis, std::vector<std::string> argv);
// The same for a reply of one value: its first line ("" when it printed none: nil).
std::string redis_value(const RedisServer& redis, std::vector<std::string> argv);

// HTTP client with JSON convenience for tests.
class Api {
 public:
  explicit Api(const std::string& base_url, const std::string& token = "");  // token: sent as Bearer
  struct Reply {
    long status;
    nlohmann::json body;
  };
  Reply call(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr);
  Reply post(const std::string& path, const nlohmann::json& body) { return call("POST", path, body); }
  Reply get(const std::string& path) { return call("GET", path); }

  // Shorthands: PUSH returns the job id (asserts 201).
  std::string push(const nlohmann::json& job);
  nlohmann::json fetch(const std::vector<std::string>& queues, const std::string& worker_id, int count = 1,
                       const nlohmann::json& extra = nlohmann::json::object());

 private:
  HttpClient client_;
};

std::string binary_path(const std::string& relative);  // under OJS_BINARY_DIR
// A Lua file of broker/store/lua as it is in the source tree (tests that EVAL the helpers).
std::string lua_source(const std::string& file);

// Polls `condition` every 100 ms until it holds or `seconds` pass; its last answer.
bool wait_until(const std::function<bool()>& condition, int seconds = 30);

// A token's SHA-256 as a token file stores it (lowercase hex, as sha256sum prints it).
std::string token_sha256(const std::string& token);

// Polls INFO until the job is in `state` (or the time is up); returns the last job seen.
nlohmann::json wait_for_state(Api& api, const std::string& job_id, const std::string& state, int timeout_ms = 30000);

}  // namespace ojs::test
