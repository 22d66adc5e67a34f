// ojsctl: CLI for admins and users of the broker.
//   ojsctl [--url URL] [--token T] [--ca-file F] [--json] <command>
//     queue config get NAME | queue config set NAME --file f.json [--expected-version N]
//     queue budget NAME | queue reconcile NAME [--repair]
//     why JOB_ID | workers list | workers quiet|drain|terminate|resume ID | jobs list QUEUE [--state S] [--limit N]
//     device drain|undrain WORKER_ID INDEX
// Exit status: 0 ok, 1 the broker refused or was unreachable, 2 usage, 3 reconcile found drift.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>

#include "ojs/client/http_client.hpp"
#include "render.hpp"

using nlohmann::json;

namespace {

struct Failure {
  int code;
  std::string message;
};

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

class Broker {
 public:
  explicit Broker(ojs::HttpClientOptions options) : client_(std::move(options)) {}

  json call(const std::string& method, const std::string& path, const std::string& body = {}) {
    auto r = client_.request(method, path, body);
    if (r.status == 0) throw Failure{1, "cannot reach " + client_.options().base_url + ": " + r.transport_error};
    auto parsed = json::parse(r.body, nullptr, false);
    if (r.status >= 400) {
      std::string message = r.body;
      if (parsed.is_object() && parsed.contains("error")) message = parsed["error"].value("message", r.body);
      throw Failure{1, "HTTP " + std::to_string(r.status) + ": " + message};
    }
    return parsed;
  }
  std::optional<json> try_get(const std::string& path) {
    try {
      return call("GET", path);
    } catch (const Failure&) {
      return std::nullopt;
    }
  }

 private:
  ojs::HttpClient client_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Failure{2, "cannot read " + path};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ojsctl: queue governance, budgets, diagnosis and inspection for the OJS GPU broker"};
  ojs::HttpClientOptions options;
  options.base_url = env_or("OJS_URL", "http://127.0.0.1:8080");
  options.bearer_token = env_or("OJS_TOKEN", "");
  bool raw_json = false;
  app.add_option("--url", options.base_url, "Broker base URL (env OJS_URL)")->capture_default_str();
  app.add_option("--token", options.bearer_token, "Bearer token (env OJS_TOKEN)");
  app.add_option("--ca-file", options.ca_file, "Trust this CA bundle for https");
  app.add_flag("--json", raw_json, "Print the broker's JSON answer instead of a rendering");
  app.require_subcommand(1);

  std::string name, file, job_id, state = "available";
  std::optional<long long> expected_version;
  bool repair = false;
  int limit = 50;
  std::function<void(Broker&)> action;

  auto* queue = app.add_subcommand("queue", "Queue configuration, budget and ledger")->require_subcommand(1);
  auto* config = queue->add_subcommand("config", "Queue configuration (ml_defaults, ml_limits, budgets, tenant_quotas)")->require_subcommand(1);
  auto* config_get = config->add_subcommand("get", "Print the configuration");
  config_get->add_option("NAME", name, "Queue")->required();
  config_get->callback([&] {
    action = [&](Broker& b) { std::cout << b.call("GET", "/ojs/v1/admin/queues/" + name + "/config")["config"].dump(2) << "\n"; };
  });
  auto* config_set = config->add_subcommand("set", "Replace the configuration with a JSON file");
  config_set->add_option("NAME", name, "Queue")->required();
  config_set->add_option("--file,-f", file, "JSON file (see examples/queues/)")->required();
  config_set->add_option("--expected-version", expected_version, "Only if the configuration is still at this version");
  config_set->callback([&] {
    action = [&](Broker& b) {
      json body = json::parse(read_file(file), nullptr, false);
      if (!body.is_object()) throw Failure{2, file + " is not a JSON object"};
      if (expected_version) body["expected_version"] = *expected_version;
      const auto saved = b.call("PUT", "/ojs/v1/admin/queues/" + name + "/config", body.dump())["config"];
      std::cout << (raw_json ? saved.dump(2) : "queue " + name + " configuration saved, version " + saved["version"].dump()) << "\n";
    };
  });
  auto* budget = queue->add_subcommand("budget", "GPU budget limits and what is in use");
  budget->add_option("NAME", name, "Queue")->required();
  budget->callback([&] {
    action = [&](Broker& b) {
      const auto r = b.call("GET", "/ojs/v1/admin/queues/" + name + "/budget")["budget"];
      std::cout << (raw_json ? r.dump(2) + "\n" : ojsctl::render_budget(r));
    };
  });
  auto* reconcile = queue->add_subcommand("reconcile", "Compare the GPU ledger with the active jobs");
  reconcile->add_option("NAME", name, "Queue")->required();
  reconcile->add_flag("--repair", repair, "Rewrite the ledger to match the active jobs (atomic)");
  reconcile->callback([&] {
    action = [&](Broker& b) {
      const auto r = b.call(repair ? "POST" : "GET", "/ojs/v1/admin/queues/" + name + "/reconcile")["reconciliation"];
      std::cout << (raw_json ? r.dump(2) + "\n" : ojsctl::render_reconciliation(r));
      if (!repair && !r.value("consistent", true)) throw Failure{3, ""};
    };
  });

  auto* why = app.add_subcommand("why", "Why a job waits (like kubectl describe)");
  why->add_option("JOB_ID", job_id, "Job id")->required();
  why->callback([&] {
    action = [&](Broker& b) {
      const auto d = b.call("GET", "/ojs/v1/jobs/" + job_id + "/diagnosis")["diagnosis"];
      if (raw_json) {
        std::cout << d.dump(2) << "\n";
        return;
      }
      // The budget line needs the admin budget endpoint; other roles simply do not get it.
      const auto budget = d.contains("queue") ? b.try_get("/ojs/v1/admin/queues/" + d["queue"].get<std::string>() + "/budget")
                                              : std::nullopt;
      const json* budget_json = budget ? &(*budget)["budget"] : nullptr;
      std::cout << ojsctl::render_why(d, budget_json);
    };
  });

  auto* workers = app.add_subcommand("workers", "Workers")->require_subcommand(1);
  workers->add_subcommand("list", "Workers with state, last contact and free GPUs")->callback([&] {
    action = [&](Broker& b) {
      const auto r = b.call("GET", "/ojs/v1/admin/workers")["workers"];
      std::cout << (raw_json ? r.dump(2) + "\n" : ojsctl::render_workers(r));
    };
  });
  // The admin directives: quiet (no new job), drain (quiet, then terminate once it
  // holds no job), terminate (finish and exit), resume (back to running).
  std::string worker_id;
  for (const std::string verb : {"quiet", "drain", "terminate", "resume"}) {
    auto* directive = workers->add_subcommand(verb, "Tell a worker to " + verb + " (its next heartbeat or fetch hears it)");
    directive->add_option("ID", worker_id, "Worker id")->required();
    directive->callback([&, verb] {
      action = [&, verb](Broker& b) {
        const auto r = b.call("POST", "/ojs/v1/admin/workers/" + worker_id + "/" + verb, "{}")["worker"];
        std::cout << (raw_json ? r.dump(2) : r.value("id", "") + ": " + r.value("state", "")) << "\n";
      };
    });
  }

  // Per-GPU drain: the device takes no new job; what runs there finishes.
  auto* device = app.add_subcommand("device", "One GPU device of a worker")->require_subcommand(1);
  int device_index = 0;
  for (const std::string verb : {"drain", "undrain"}) {
    auto* cmd = device->add_subcommand(verb, verb == "drain" ? "Place no new job on the device" : "Place jobs on the device again");
    cmd->add_option("WORKER_ID", worker_id, "Worker id")->required();
    cmd->add_option("INDEX", device_index, "Device index (as in ext_ml_assigned_devices)")->required()->check(CLI::Range(0, 1023));
    cmd->callback([&, verb] {
      action = [&, verb](Broker& b) {
        const auto r = b.call("POST", "/ojs/v1/admin/workers/" + worker_id + "/devices/" + std::to_string(device_index) + "/" + verb);
        if (raw_json) {
          std::cout << r.dump(2) << "\n";
          return;
        }
        std::string drained;
        for (const auto& d : r["worker"]["drained_devices"]) drained += (drained.empty() ? "" : ",") + d.dump();
        std::cout << "worker " << worker_id << " device " << device_index << " " << verb << "ed; drained devices: ["
                  << drained << "]\n";
      };
    });
  }

  auto* jobs = app.add_subcommand("jobs", "Jobs")->require_subcommand(1);
  auto* jobs_list = jobs->add_subcommand("list", "Jobs of a queue in one state");
  jobs_list->add_option("QUEUE", name, "Queue")->required();
  jobs_list->add_option("--state", state, "available, active, scheduled, retryable or dead")->capture_default_str();
  jobs_list->add_option("--limit", limit, "At most this many")->capture_default_str();
  jobs_list->callback([&] {
    action = [&](Broker& b) {
      const auto r = b.call("GET", "/ojs/v1/admin/queues/" + name + "/jobs?state=" + state + "&limit=" + std::to_string(limit));
      std::cout << (raw_json ? r.dump(2) + "\n" : ojsctl::render_jobs(r));
    };
  });

  CLI11_PARSE(app, argc, argv);
  try {
    Broker broker(options);
    if (action) action(broker);
  } catch (const Failure& f) {
    if (!f.message.empty()) std::cerr << "ojsctl: " << f.message << "\n";
    return f.code;
  }
  return 0;
}
