// `worker`: the OJS agent that runs on each GPU node. See docs/worker.md.
#include "worker/agent/agent.hpp"
#include "worker/agent/http_broker_api.hpp"
#include "worker/agent/shutdown_signal.hpp"
#include "worker/config/json_file.hpp"
#include "worker/discovery/capabilities.hpp"
#include "worker/discovery/nvml_loader.hpp"
#include "worker/discovery/xid_watcher.hpp"
#include "worker/isolation/cuda_libraries.hpp"

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

namespace {

std::string default_worker_id() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return std::string(host) + "-" + std::to_string(getpid());
}

// The command line: every flag, and where each goes.
struct Flags {
  std::string broker = "http://127.0.0.1:8080";
  std::string token;
  std::string ca_file;
  bool insecure = false;
  std::vector<std::string> queues{"default"};
  std::string worker_id = default_worker_id();
  std::string capabilities_file;
  std::string config_file;
  std::vector<std::string> command_assignments;
  unsigned concurrency = 0;
  long poll_interval_ms = 1000;
  double heartbeat_interval_s = 10;
  long visibility_timeout_ms = 60000;
  std::string work_dir;
  bool print_capabilities = false;
  bool print_nvml_inventory = false;
  bool once = false;
  std::string log_level = "info";
};

void add_flags(CLI::App& app, Flags& f) {
  app.add_option("--broker", f.broker, "broker base URL")->capture_default_str();
  app.add_option("--token", f.token, "bearer token (or env OJS_TOKEN)")->envname("OJS_TOKEN");
  app.add_option("--ca-file", f.ca_file, "CA bundle to trust for https");
  app.add_flag("--insecure", f.insecure, "skip TLS verification (testing only)");
  app.add_option("--queues", f.queues, "queues to fetch from, in priority order")->delimiter(',')->capture_default_str();
  app.add_option("--worker-id", f.worker_id, "worker id (default hostname-pid)");
  app.add_option("--capabilities-file", f.capabilities_file, "JSON merged over discovered capabilities; \"simulate\": true replaces them");
  app.add_option("--config", f.config_file, "worker config JSON (commands, labels, models, runtimes, models_dir, ...)");
  app.add_option("--command", f.command_assignments, "TYPE=CMD, shell command for a job type (exact, prefix.* or *); repeatable");
  app.add_option("--concurrency", f.concurrency, "max jobs at once (default: config, else 1)");
  app.add_option("--poll-interval-ms", f.poll_interval_ms, "wait between FETCHes that found nothing")->capture_default_str();
  app.add_option("--heartbeat-interval-s", f.heartbeat_interval_s, "heartbeat period")->capture_default_str();
  app.add_option("--visibility-timeout-ms", f.visibility_timeout_ms, "job reservation asked for at FETCH and BEAT")->capture_default_str();
  app.add_option("--work-dir", f.work_dir, "root of per-job working directories (default: config, else /tmp/ojs-worker)");
  app.add_flag("--print-capabilities", f.print_capabilities, "print the capabilities advertisement as JSON and exit");
  app.add_flag("--print-nvml-inventory", f.print_nvml_inventory,
               "print the raw NVML values as JSON (the tests/fixtures/nvml format) and exit");
  app.add_flag("--once", f.once, "exit when a FETCH finds the queues empty and running jobs are done");
  app.add_option("--log-level", f.log_level, "trace, debug, info, warn, error")->capture_default_str();
}

// The config file with the command line's overrides.
ojs::worker::WorkerConfig worker_config(const Flags& f) {
  using namespace ojs::worker;
  WorkerConfig config = f.config_file.empty() ? WorkerConfig{} : load_worker_config(f.config_file);
  for (const auto& assignment : f.command_assignments) {
    auto [type, command] = parse_command_assignment(assignment);
    config.commands[type] = std::move(command);
  }
  if (f.concurrency > 0) config.concurrency = f.concurrency;
  if (!f.work_dir.empty()) config.work_dir = f.work_dir;
  return config;
}

// Isolation as this host allows it; the advertised label says which (jobs may select on it).
std::unique_ptr<ojs::worker::JobIsolation> start_isolation(const ojs::worker::WorkerConfig& config, const char* argv0,
                                                           const std::string& worker_id, nlohmann::json& capabilities) {
  using namespace ojs::worker;
  std::string why_off;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  auto isolation = JobIsolation::create(config.isolation, ec ? std::string(argv0) : self.string(), worker_id, &why_off);
  if (isolation) {
    std::string controllers;
    for (const auto& c : isolation->controllers()) controllers += (controllers.empty() ? "" : ", ") + c;
    spdlog::info("jobs are isolated: {} ({}) and a private /dev", isolation->mode(), controllers);
  }
  else spdlog::warn("jobs are not isolated: {}", why_off);
  capabilities["labels"]["ojs.io/isolation"] = isolation ? isolation->mode() : "off";
  // The CUDA versions advertised are the ones a job can be given: mounted only where it is isolated.
  if (!config.isolation.cuda_libraries.empty() && !isolation)
    spdlog::warn("isolation.cuda_libraries is set but jobs are not isolated: no CUDA version is advertised");
  advertise_cuda_libraries(capabilities, config.isolation.cuda_libraries, isolation != nullptr);
  return isolation;
}

// What watches the GPUs discovery read (not simulated ones): XID errors, telemetry.
struct DeviceWatch {
  ojs::worker::DeviceFaults faults;
  std::unique_ptr<ojs::worker::XidWatcher> xid;
  std::unique_ptr<ojs::worker::GpuTelemetry> telemetry;
};

void start_device_watch(DeviceWatch& watch, const ojs::worker::WorkerConfig& config, const std::string& capabilities_file,
                        ojs::worker::AgentOptions& options) {
  using namespace ojs::worker;
  if (!capabilities_file.empty() && requests_simulation(read_json_file(capabilities_file))) return;
  std::string why;
  watch.xid = XidWatcher::start(config.nvml_library, watch.faults, &why);
  if (watch.xid) spdlog::info("watching {} GPU(s) for XID errors", watch.xid->watched_gpus());
  else spdlog::info("no XID watching ({})", why);
  options.device_faults = &watch.faults;
  if (config.telemetry_interval_s > 0) {
    std::string why_not;
    watch.telemetry = GpuTelemetry::open(config.nvml_library, &why_not);
    if (!watch.telemetry) spdlog::info("no GPU telemetry ({})", why_not);
    options.telemetry = watch.telemetry.get();
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ojs::worker;
  // Launcher mode: the agent starts each isolated job through itself (job_isolation.hpp).
  if (argc >= 4 && std::string(argv[1]) == "--exec-isolated" && std::string(argv[3]) == "--")
    return run_isolated(argv[2], std::vector<std::string>(argv + 4, argv + argc));
  CLI::App app{"OJS worker agent: discovers GPUs, fetches matching jobs from an OJS broker, runs them"};
  Flags f;
  add_flags(app, f);
  CLI11_PARSE(app, argc, argv);

  // stdout is the capabilities document for --print-capabilities: logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("worker"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc);
  spdlog::set_level(spdlog::level::from_str(f.log_level));

  try {
    WorkerConfig config = worker_config(f);
    if (f.print_nvml_inventory) {  // how a GPU machine's inventory becomes a parser fixture
      const auto nvml = load_nvml_inventory(config.nvml_library);
      if (!nvml.inventory) {
        spdlog::error("no NVML inventory: {}", nvml.unavailable_reason);
        return 1;
      }
      std::cout << nlohmann::json(*nvml.inventory).dump(1) << std::endl;
      return 0;
    }
    nlohmann::json capabilities = build_capabilities(config, f.capabilities_file);
    if (f.print_capabilities) {
      std::cout << capabilities.dump(2) << std::endl;
      return 0;
    }
    const auto isolation = start_isolation(config, argv[0], f.worker_id, capabilities);
    if (config.commands.empty()) {
      spdlog::error("no commands configured: use --command TYPE=CMD or \"commands\" in --config");
      return 2;
    }
    install_shutdown_handlers();
    HttpBrokerApi api(ojs::HttpClientOptions{f.broker, f.token, 30000, f.ca_file, f.insecure});
    AgentOptions options;
    options.worker_id = f.worker_id;
    options.queues = f.queues;
    options.poll_interval = std::chrono::milliseconds(f.poll_interval_ms);
    options.heartbeat_interval_s = f.heartbeat_interval_s;
    options.visibility_timeout_ms = f.visibility_timeout_ms;
    options.once = f.once;
    options.isolation = isolation.get();
    DeviceWatch watch;
    start_device_watch(watch, config, f.capabilities_file, options);
    Agent agent(api, std::move(config), std::move(options), capabilities, shutdown_requested);
    return agent.run();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}
