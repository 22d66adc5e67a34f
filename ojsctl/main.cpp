// ojsctl: CLI for admins and users of the broker, after kubectl's conventions (verb
// then object, `-o table|json|name`, `logs -f`, `--tail`) with Slurm's words for
// the job verbs (scontrol hold / release / update).
//   ojsctl [--url URL] [--token T] [--ca-file F] [-o table|json|name] <command>   (global flags also after it)
//     push [-f job.json] [--type T] [--queue Q] [--args JSON] [--priority N] [--gpus N] [--gpu-type T]
//          [--priority-class C] [--set ext_ml_KEY=VALUE]...
//     cancel|kill|retry|hold|release JOB_ID | update JOB_ID [--priority N] [--priority-class C] [--set ...]
//     logs JOB_ID [-f] [--tail N] [--since CURSOR|TIME] | watch JOB_ID
//     jobs list [QUEUE] [--state S] [--type T] [--limit N] [--page P]
//     dead-letter list [--queue Q] [--limit N] | dead-letter retry|delete JOB_ID
//     queue config get NAME | queue config set NAME --file f.json [--expected-version N]
//     queue budget NAME | queue reconcile NAME [--repair]
//     usage [--from T] [--to T] [--by tenant|queue|type|worker] [--queue Q]
//     why JOB_ID | workers list | workers quiet|drain|terminate|resume ID | device drain|undrain WORKER_ID INDEX
//     completion bash
// Exit status (docs/operations.md "Operating day to day"): 0 ok; 1 the broker failed or
// was unreachable; 2 usage, or the broker refused the request as invalid (400, 422);
// 3 reconcile found drift; 4 no such job, queue or worker (404); 5 the job's state does
// not allow it (409); 6 not allowed (401, 403); 7 `watch` / `logs -f`: the job ended
// other than completed (cancelled, discarded).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "ojs/client/http_client.hpp"
#include "render.hpp"

using nlohmann::json;

namespace {

struct Failure {
  int code;
  std::string message;
};

constexpr int kExitEndedBadly = 7;

int exit_code_of(long status) {
  if (status == 400 || status == 422) return 2;
  if (status == 404) return 4;
  if (status == 409) return 5;
  if (status == 401 || status == 403) return 6;
  return 1;
}

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
      throw Failure{exit_code_of(r.status), "HTTP " + std::to_string(r.status) + ": " + message};
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
  // Server-sent events of `path`, each handed to on_event(event, data) until it returns
  // false or the stream ends.
  void events(const std::string& path, const std::function<bool(const std::string&, const std::string&)>& on_event) {
    std::string buffer, event, data;
    bool more = true;
    auto r = client_.stream(path, [&](const std::string& chunk) {
      buffer += chunk;
      for (std::size_t nl; more && (nl = buffer.find('\n')) != std::string::npos;) {
        std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) {
          if (!event.empty() || !data.empty()) more = on_event(event.empty() ? "message" : event, data);
          event.clear();
          data.clear();
        } else if (line.rfind("event:", 0) == 0) {
          event = line.substr(line.size() > 6 && line[6] == ' ' ? 7 : 6);
        } else if (line.rfind("data:", 0) == 0) {
          data += (data.empty() ? "" : "\n") + line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5);
        }
      }
      return more;
    });
    if (!more) return;  // stopped by on_event
    if (r.status == 0) throw Failure{1, "cannot reach " + client_.options().base_url + ": " + r.transport_error};
    if (r.status >= 400) throw Failure{exit_code_of(r.status), "HTTP " + std::to_string(r.status)};
  }

 private:
  ojs::HttpClient client_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Failure{2, "cannot read " + path};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// --set KEY=VALUE: VALUE as JSON when it parses (numbers, true, objects), else as a string.
void apply_sets(json& body, const std::vector<std::string>& sets) {
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw Failure{2, "--set takes KEY=VALUE, got '" + s + "'"};
    const std::string key = s.substr(0, eq), text = s.substr(eq + 1);
    json value = json::parse(text, nullptr, false);
    body[key] = value.is_discarded() ? json(text) : value;
  }
}

bool is_terminal(const std::string& state) { return state == "completed" || state == "cancelled" || state == "discarded"; }

// A job's output for a terminal: control characters other than newline, tab and
// carriage return shown as \xNN, so what a job printed cannot drive the terminal
// (escape sequences) unless --raw asks for the bytes as they are.
std::string for_terminal(const std::string& text) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : text) {
    if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// An id or name as one URL path segment or query value: everything but letters, digits,
// '-', '_' and '~' percent-encoded, so "../admin/queues/Q" stays one segment (a client
// that resolves dot segments never sees one) and '&', '#', '?' stay in their value.
std::string url_part(const std::string& text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The command line: the global flags, each subcommand's options, and the action the
// parsed subcommand leaves to run against the broker. The subcommands' callbacks
// capture `this`, which outlives the parse.
class Cli {
 public:
  Cli() : app_{"ojsctl: jobs, logs, workers, queues, budgets and diagnosis for the OJS GPU broker"} {
    add_global_flags();
    add_queue_commands();
    add_worker_commands();
    add_job_commands();
    add_log_commands();
    add_list_commands();
    add_usage_command();
    add_completion_command();
    // After the subcommands: a footer set earlier would be inherited by each of them.
    app_.footer(kExamples);
  }

  int run(int argc, char** argv) {
    try {
      app_.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      // --help and --version exit 0; every usage error exits 2, as documented (CLI11's
      // own codes, 105 and up, are not).
      return app_.exit(e) == 0 ? 0 : 2;
    }
    if (output_ == "json") raw_json_ = true;
    try {
      Broker broker(options_);
      if (action_) action_(broker);
    } catch (const Failure& f) {
      if (!f.message.empty()) std::cerr << "ojsctl: " << f.message << "\n";
      return f.code;
    }
    return 0;
  }

 private:
  static constexpr const char* kExamples = R"(Examples:
  # Submit a job that needs 4 H100s, and print its id
  ojsctl push --type ml.train --gpus 4 --gpu-type nvidia-h100 -o name

  # Submit a job from a file, into another queue
  ojsctl push -f examples/jobs/train-8xh100.json --queue training

  # Why is a job still waiting, and when is it expected to start?
  ojsctl why JOB_ID

  # Follow a job's state changes, or its output, until it ends
  ojsctl watch JOB_ID
  ojsctl logs -f JOB_ID

  # Jobs waiting in a queue; workers and their free GPUs
  ojsctl jobs list training --state available
  ojsctl workers list

  # Take a worker out of service once its jobs finish
  ojsctl workers drain dgx-01

  # GPU-hours by tenant over the last day, as JSON
  ojsctl usage --by tenant -o json

Global flags (--url, --token, --ca-file, -o, --json) go before or after the command.
Exit status: 0 ok, 1 broker error or unreachable, 2 invalid, 3 drift, 4 not found,
5 state conflict, 6 not allowed, 7 the watched job ended other than completed.)";

  void add_global_flags() {
    options_.base_url = env_or("OJS_URL", "http://127.0.0.1:8080");
    options_.bearer_token = env_or("OJS_TOKEN", "");
    app_.add_option("--url", options_.base_url, "Broker base URL (env OJS_URL)")->capture_default_str();
    app_.add_option("--token", options_.bearer_token, "Bearer token (env OJS_TOKEN)");
    app_.add_option("--ca-file", options_.ca_file, "Trust this CA bundle for https");
    app_.add_option("--output,-o", output_, "table (for people), json (the broker's answer), name (ids only, for scripts)")
        ->check(CLI::IsMember({"table", "json", "name"}))
        ->capture_default_str();
    app_.add_flag("--json", raw_json_, "The same as -o json");
    app_.require_subcommand(1);
    // A flag a subcommand does not know is tried on its parents, so the global flags
    // work after the subcommand too (kubectl's `get pods -o json`). Inherited by every
    // subcommand added after this.
    app_.fallthrough();
  }

  // One job's envelope as -o asks: a table row, the JSON, or its id.
  void print_job(const json& job) const {
    if (raw_json_) std::cout << job.dump(2) << "\n";
    else if (output_ == "name") std::cout << job.value("id", "") << "\n";
    else std::cout << ojsctl::render_job(job);
  }

  // A list reply as -o asks: the JSON, its items' ids, or a table.
  void print_jobs(const json& r) const {
    if (raw_json_) std::cout << r.dump(2) << "\n";
    else if (output_ == "name") for (const auto& j : r["items"]) std::cout << j.value("id", "") << "\n";
    else std::cout << ojsctl::render_jobs(r);
  }

  void add_queue_commands() {
    auto* queue = app_.add_subcommand("queue", "Queue configuration, budget and ledger")->require_subcommand(1);
    auto* config =
        queue->add_subcommand("config", "Queue configuration (ml_defaults, ml_limits, budgets, tenant_quotas)")->require_subcommand(1);
    auto* config_get = config->add_subcommand("get", "Print the configuration");
    config_get->add_option("NAME", name_, "Queue")->required();
    config_get->callback([this] {
      action_ = [this](Broker& b) {
        std::cout << b.call("GET", "/ojs/v1/admin/queues/" + url_part(name_) + "/config")["config"].dump(2) << "\n";
      };
    });
    auto* config_set = config->add_subcommand("set", "Replace the configuration with a JSON file");
    config_set->add_option("NAME", name_, "Queue")->required();
    config_set->add_option("--file,-f", file_, "JSON file (see examples/queues/)")->required();
    config_set->add_option("--expected-version", expected_version_, "Only if the configuration is still at this version");
    config_set->callback([this] {
      action_ = [this](Broker& b) {
        json body = json::parse(read_file(file_), nullptr, false);
        if (!body.is_object()) throw Failure{2, file_ + " is not a JSON object"};
        if (expected_version_) body["expected_version"] = *expected_version_;
        const auto saved = b.call("PUT", "/ojs/v1/admin/queues/" + url_part(name_) + "/config", body.dump())["config"];
        std::cout << (raw_json_ ? saved.dump(2) : "queue " + name_ + " configuration saved, version " + saved["version"].dump())
                  << "\n";
      };
    });
    auto* budget = queue->add_subcommand("budget", "GPU budget limits and what is in use");
    budget->add_option("NAME", name_, "Queue")->required();
    budget->callback([this] {
      action_ = [this](Broker& b) {
        const auto r = b.call("GET", "/ojs/v1/admin/queues/" + url_part(name_) + "/budget")["budget"];
        std::cout << (raw_json_ ? r.dump(2) + "\n" : ojsctl::render_budget(r));
      };
    });
    auto* reconcile = queue->add_subcommand("reconcile", "Compare the GPU ledger with the active jobs");
    reconcile->add_option("NAME", name_, "Queue")->required();
    reconcile->add_flag("--repair", repair_, "Rewrite the ledger to match the active jobs (atomic)");
    reconcile->callback([this] {
      action_ = [this](Broker& b) {
        const auto r = b.call(repair_ ? "POST" : "GET", "/ojs/v1/admin/queues/" + url_part(name_) + "/reconcile")["reconciliation"];
        std::cout << (raw_json_ ? r.dump(2) + "\n" : ojsctl::render_reconciliation(r));
        if (!repair_ && !r.value("consistent", true)) throw Failure{3, ""};
      };
    });
  }

  // why, workers and per-GPU drain: what an operator looks at and acts on.
  void add_worker_commands() {
    auto* why = app_.add_subcommand("why", "Why a job waits (like kubectl describe)");
    why->add_option("JOB_ID", job_id_, "Job id")->required();
    why->callback([this] {
      action_ = [this](Broker& b) {
        const auto d = b.call("GET", "/ojs/v1/jobs/" + url_part(job_id_) + "/diagnosis")["diagnosis"];
        if (raw_json_) {
          std::cout << d.dump(2) << "\n";
          return;
        }
        // The budget line needs the admin budget endpoint; other roles simply do not get it.
        const auto budget = d.contains("queue") ? b.try_get("/ojs/v1/admin/queues/" + url_part(d["queue"].get<std::string>()) + "/budget")
                                                : std::nullopt;
        std::cout << ojsctl::render_why(d, budget ? &(*budget)["budget"] : nullptr);
      };
    });

    auto* workers = app_.add_subcommand("workers", "Workers")->require_subcommand(1);
    workers->add_subcommand("list", "Workers with state, last contact and free GPUs")->callback([this] {
      action_ = [this](Broker& b) {
        const auto r = b.call("GET", "/ojs/v1/admin/workers")["workers"];
        std::cout << (raw_json_ ? r.dump(2) + "\n" : ojsctl::render_workers(r));
      };
    });
    // The admin directives: quiet (no new job), drain (quiet, then terminate once it
    // holds no job), terminate (finish and exit), resume (back to running).
    for (const std::string verb : {"quiet", "drain", "terminate", "resume"}) {
      auto* directive = workers->add_subcommand(verb, "Tell a worker to " + verb + " (its next heartbeat or fetch hears it)");
      directive->add_option("ID", worker_id_, "Worker id")->required();
      directive->callback([this, verb] {
        action_ = [this, verb](Broker& b) {
          const auto r = b.call("POST", "/ojs/v1/admin/workers/" + url_part(worker_id_) + "/" + verb, "{}")["worker"];
          std::cout << (raw_json_ ? r.dump(2) : r.value("id", "") + ": " + r.value("state", "")) << "\n";
        };
      });
    }

    // Per-GPU drain: the device takes no new job; what runs there finishes.
    auto* device = app_.add_subcommand("device", "One GPU device of a worker")->require_subcommand(1);
    for (const std::string verb : {"drain", "undrain"}) {
      auto* cmd = device->add_subcommand(verb, verb == "drain" ? "Place no new job on the device" : "Place jobs on the device again");
      cmd->add_option("WORKER_ID", worker_id_, "Worker id")->required();
      cmd->add_option("INDEX", device_index_, "Device index (as in ext_ml_assigned_devices)")->required()->check(CLI::Range(0, 1023));
      cmd->callback([this, verb] {
        action_ = [this, verb](Broker& b) {
          const auto r =
              b.call("POST", "/ojs/v1/admin/workers/" + url_part(worker_id_) + "/devices/" + std::to_string(device_index_) + "/" + verb);
          if (raw_json_) {
            std::cout << r.dump(2) << "\n";
            return;
          }
          std::string drained;
          for (const auto& d : r["worker"]["drained_devices"]) drained += (drained.empty() ? "" : ",") + d.dump();
          std::cout << "worker " << worker_id_ << " device " << device_index_ << " " << verb << "ed; drained devices: ["
                    << drained << "]\n";
        };
      });
    }
  }

  // --priority, --priority-class and --set, shared by push and update.
  void add_attribute_options(CLI::App* cmd) {
    cmd->add_option("--priority", priority_, "Priority (-100 .. 100, higher first)");
    cmd->add_option("--priority-class", priority_class_, "ext_ml_priority_class (spot, on-demand, reserved)");
    cmd->add_option("--set", sets_, "KEY=VALUE: any ext_ml_* attribute (VALUE as JSON when it parses); repeatable");
  }
  void apply_attributes(json& body) const {
    if (priority_) body["priority"] = *priority_;
    if (!priority_class_.empty()) body["ext_ml_priority_class"] = priority_class_;
    apply_sets(body, sets_);
  }

  // push, the verbs on one job, update.
  void add_job_commands() {
    auto* push = app_.add_subcommand("push", "Submit a job (like sbatch / kubectl create)");
    push->add_option("--file,-f", file_, "The job as JSON (flags below override its fields)");
    push->add_option("--type", type_, "Job type, e.g. ml.train");
    push->add_option("--queue,-q", name_, "Queue (default: the file's, else default)");
    push->add_option("--args", args_json_, "Arguments as a JSON array")->capture_default_str();
    push->add_option("--gpus", gpus_, "ext_ml_gpu_count");
    push->add_option("--gpu-type", gpu_type_, "ext_ml_gpu_type, e.g. nvidia-h100");
    add_attribute_options(push);
    push->callback([this, push] {
      action_ = [this, push](Broker& b) {
        json body = file_.empty() ? json::object() : json::parse(read_file(file_), nullptr, false);
        if (!body.is_object()) throw Failure{2, file_ + " is not a JSON object"};
        if (!type_.empty()) body["type"] = type_;
        if (!body.contains("args") || push->count("--args")) {
          body["args"] = json::parse(args_json_, nullptr, false);
          if (!body["args"].is_array()) throw Failure{2, "--args must be a JSON array"};
        }
        if (!name_.empty()) body["options"]["queue"] = name_;
        if (gpus_) body["ext_ml_gpu_count"] = *gpus_;
        if (!gpu_type_.empty()) body["ext_ml_gpu_type"] = gpu_type_;
        apply_attributes(body);
        if (!body.contains("type")) throw Failure{2, "a job needs a type: --type or \"type\" in the file"};
        print_job(b.call("POST", "/ojs/v1/jobs", body.dump())["job"]);
      };
    });

    // One verb on one job: its envelope after.
    struct JobVerb {
      const char* name;
      const char* help;
      const char* method;
      const char* path;  // appended to /ojs/v1/
    };
    for (const JobVerb v : {JobVerb{"cancel", "Cancel a job; a running one gets SIGTERM, its grace, then SIGKILL (scancel)", "DELETE", "jobs/"},
                            JobVerb{"kill", "Cancel a job; a running one gets SIGKILL now (scancel --signal=KILL)", "POST", "jobs/ID/kill"},
                            JobVerb{"retry", "Run a finished job again (dead letter, discarded, cancelled)", "POST", "admin/jobs/ID/retry"},
                            JobVerb{"hold", "Keep a waiting job from being scheduled (scontrol hold)", "POST", "jobs/ID/hold"},
                            JobVerb{"release", "Let a held job be scheduled again (scontrol release)", "POST", "jobs/ID/release"}}) {
      auto* cmd = app_.add_subcommand(v.name, v.help);
      cmd->add_option("JOB_ID", job_id_, "Job id")->required();
      cmd->callback([this, v] {
        action_ = [this, v](Broker& b) {
          std::string path = std::string("/ojs/v1/") + v.path;
          if (const auto at = path.find("ID"); at != std::string::npos) path.replace(at, 2, url_part(job_id_));
          else path += url_part(job_id_);
          print_job(b.call(v.method, path, std::string(v.method) == "POST" ? "{}" : "")["job"]);
        };
      });
    }
    auto* update = app_.add_subcommand("update", "Change a waiting job's priority or ext_ml_* attributes (scontrol update)");
    update->add_option("JOB_ID", job_id_, "Job id")->required();
    add_attribute_options(update);
    update->callback([this] {
      action_ = [this](Broker& b) {
        json body = json::object();
        apply_attributes(body);
        if (body.empty()) throw Failure{2, "nothing to change: --priority, --priority-class or --set"};
        print_job(b.call("PATCH", "/ojs/v1/jobs/" + url_part(job_id_), body.dump())["job"]);
      };
    });
  }

  // logs and watch: a job's output and state changes, once or until it ends.
  void add_log_commands() {
    auto* logs = app_.add_subcommand("logs", "A job's stdout and stderr (kubectl logs)");
    logs->add_option("JOB_ID", job_id_, "Job id")->required();
    logs->add_flag("--follow,-f", follow_, "Keep printing until the job ends");
    logs->add_flag("--raw", raw_output_, "Print the output's bytes as they are (control characters included)");
    logs->add_option("--tail", tail_, "Only the last N lines");
    logs->add_option("--since", since_, "Only after this cursor (a `next` of -o json) or RFC 3339 time");
    logs->callback([this] { action_ = [this](Broker& b) { print_logs(b); }; });

    auto* watch = app_.add_subcommand("watch", "Print a job's state changes until it ends (kubectl get -w)");
    watch->add_option("JOB_ID", job_id_, "Job id")->required();
    watch->callback([this] { action_ = [this](Broker& b) { watch_job(b); }; });
  }

  void print_logs(Broker& b) {
    const auto shown = [&](const std::string& data) { return raw_output_ ? data : for_terminal(data); };
    std::string query;
    if (tail_) query += "&tail=" + std::to_string(*tail_);
    if (!since_.empty()) query += "&since=" + url_part(since_);
    const std::string path = "/ojs/v1/jobs/" + url_part(job_id_) + "/logs";
    const auto page = b.call("GET", path + (query.empty() ? "" : "?" + query.substr(1)));  // 404, 403 before streaming
    if (!follow_) {
      if (raw_json_) std::cout << page.dump(2) << "\n";
      else for (const auto& e : page["entries"]) std::cout << shown(e["data"].get<std::string>());
      return;
    }
    std::string end_state;
    b.events(path + "?follow=true" + (query.empty() ? "" : query), [&](const std::string& event, const std::string& data) {
      const auto d = json::parse(data, nullptr, false);
      if (raw_json_) std::cout << d.dump() << "\n";
      else if (event == "log" && d.is_object()) std::cout << shown(d.value("data", ""));
      std::cout.flush();
      if (event == "end" && d.is_object() && d["state"].is_string()) end_state = d["state"].get<std::string>();
      return event != "end";
    });
    if (!end_state.empty() && end_state != "completed") throw Failure{kExitEndedBadly, ""};
  }

  void watch_job(Broker& b) {
    const auto job = b.call("GET", "/ojs/v1/jobs/" + url_part(job_id_))["job"];
    std::string last = job.value("state", "");
    const auto line = [&](const std::string& time, const std::string& what, const json& event) {
      if (raw_json_) std::cout << event.dump() << "\n";
      else if (output_ != "name") std::cout << time << "  " << what << "\n";
      std::cout.flush();
    };
    line(job.value("enqueued_at", job.value("created_at", "")), "state " + last, job);
    if (!is_terminal(last)) {
      b.events("/ojs/v1/jobs/" + url_part(job_id_) + "/events", [&](const std::string& event, const std::string& data) {
        const auto e = json::parse(data, nullptr, false);
        if (!e.is_object() || event.rfind("job.", 0) != 0) return true;
        const json& d = e.contains("data") && e["data"].is_object() ? e["data"] : e;
        const std::string time = e.value("time", e.value("timestamp", ""));
        std::string to = d.value("to", d.value("state", ""));
        if (to.empty() && event.size() > 4) {  // job.completed, job.cancelled, job.discarded: the state itself
          const auto s = event.substr(4);
          if (is_terminal(s) || s == "started" || s == "available") to = s == "started" ? "active" : s;
        }
        line(time, event + (d.contains("worker_id") ? " worker=" + d["worker_id"].get<std::string>() : std::string()), e);
        if (!to.empty()) last = to;
        return !is_terminal(last);
      });
    }
    if (output_ == "name") std::cout << last << "\n";
    if (is_terminal(last) && last != "completed") throw Failure{kExitEndedBadly, ""};
  }

  // jobs list and the dead letter queue.
  void add_list_commands() {
    auto* jobs = app_.add_subcommand("jobs", "Jobs")->require_subcommand(1);
    auto* jobs_list = jobs->add_subcommand("list", "Jobs in one state, across queues or in one (squeue / kubectl get jobs)");
    jobs_list->add_option("QUEUE", name_, "Queue (default: all)");
    jobs_list->add_option("--state", state_, "available, active, scheduled, retryable, dead, completed, discarded or cancelled")
        ->capture_default_str();
    jobs_list->add_option("--type", type_, "Job type, exact or a prefix ending in *");
    jobs_list->add_option("--limit", limit_, "At most this many per page (1 .. 100)")->capture_default_str()->check(CLI::Range(1, 100));
    jobs_list->add_option("--page", page_, "Page (from 1)");
    jobs_list->callback([this] {
      action_ = [this](Broker& b) {
        std::string path = "/ojs/v1/admin/jobs?state=" + url_part(state_) + "&per_page=" + std::to_string(limit_);
        if (!name_.empty()) path += "&queue=" + url_part(name_);
        if (!type_.empty()) path += "&type=" + url_part(type_);
        if (page_) path += "&page=" + std::to_string(*page_);
        print_jobs(b.call("GET", path));
      };
    });

    auto* dead = app_.add_subcommand("dead-letter", "The dead letter queue")->require_subcommand(1);
    auto* dead_list = dead->add_subcommand("list", "Dead-lettered jobs, newest first");
    dead_list->add_option("--queue,-q", name_, "Only this queue");
    dead_list->add_option("--limit", limit_, "At most this many")->capture_default_str()->check(CLI::Range(1, 1000));
    dead_list->callback([this] {
      action_ = [this](Broker& b) {
        print_jobs(b.call("GET", "/ojs/v1/admin/dead-letter?limit=" + std::to_string(limit_) + (name_.empty() ? "" : "&queue=" + url_part(name_))));
      };
    });
    auto* dead_retry = dead->add_subcommand("retry", "Make a dead-lettered job available again (attempts reset)");
    dead_retry->add_option("JOB_ID", job_id_, "Job id")->required();
    dead_retry->callback([this] {
      action_ = [this](Broker& b) { print_job(b.call("POST", "/ojs/v1/admin/dead-letter/" + url_part(job_id_) + "/retry", "{}")["job"]); };
    });
    auto* dead_delete = dead->add_subcommand("delete", "Delete a dead-lettered job");
    dead_delete->add_option("JOB_ID", job_id_, "Job id")->required();
    dead_delete->callback([this] {
      action_ = [this](Broker& b) {
        // The non-admin path answers {deleted, job_id} (the admin one is a bare 204).
        const auto r = b.call("DELETE", "/ojs/v1/dead-letter/" + url_part(job_id_));
        if (raw_json_) std::cout << r.dump(2) << "\n";
        else std::cout << (output_ == "name" ? job_id_ : "job " + job_id_ + " deleted") << "\n";
      };
    });
  }

  // sreport-style resource use (GET /ojs/v1/admin/usage); times RFC 3339.
  void add_usage_command() {
    auto* usage = app_.add_subcommand("usage", "Resource-hours used by tenant, queue, job type or worker (sreport)");
    usage->add_option("--from", from_, "Start, RFC 3339 (default: 24 hours before --to)");
    usage->add_option("--to", to_, "End, RFC 3339 (default: now)");
    usage->add_option("--by", by_, "Group by")->check(CLI::IsMember({"tenant", "queue", "type", "worker"}))->capture_default_str();
    usage->add_option("--queue,-q", name_, "Only this queue");
    usage->callback([this] {
      action_ = [this](Broker& b) {
        std::string path = "/ojs/v1/admin/usage?by=" + url_part(by_);
        if (!from_.empty()) path += "&from=" + url_part(from_);  // '+' of an offset stays '+'
        if (!to_.empty()) path += "&to=" + url_part(to_);
        if (!name_.empty()) path += "&queue=" + url_part(name_);
        const auto r = b.call("GET", path);
        if (raw_json_) std::cout << r.dump(2) << "\n";
        else if (output_ == "name") for (const auto& row : r["rows"]) std::cout << row.value(by_, "") << "\n";
        else std::cout << ojsctl::render_usage(r);
      };
    });
  }

  void add_completion_command() {
    auto* completion = app_.add_subcommand("completion", "Print a shell completion script (bash): source <(ojsctl completion bash)");
    completion->add_option("SHELL", shell_, "bash")->check(CLI::IsMember({"bash"}));
    completion->callback([this] {
      action_ = [this](Broker&) {
        std::string words;
        for (const auto* sub : app_.get_subcommands([](CLI::App*) { return true; })) words += sub->get_name() + " ";
        std::cout << "_ojsctl() {\n  local cur=${COMP_WORDS[COMP_CWORD]}\n  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
                  << "    COMPREPLY=($(compgen -W \"" << words << "\" -- \"$cur\"))\n  fi\n}\ncomplete -F _ojsctl ojsctl\n";
      };
    });
  }

  CLI::App app_;
  ojs::HttpClientOptions options_;
  bool raw_json_ = false;
  bool raw_output_ = false;  // logs --raw
  std::string output_ = "table";
  std::function<void(Broker&)> action_;
  // Each subcommand's options; one parse fills those of one subcommand.
  std::string name_, file_, job_id_, worker_id_, state_ = "available";
  std::string type_, args_json_ = "[]", gpu_type_, priority_class_, since_;
  std::string from_, to_, by_ = "tenant", shell_ = "bash";
  std::optional<long long> expected_version_, tail_;
  std::optional<int> priority_, gpus_, page_;
  std::vector<std::string> sets_;
  bool repair_ = false, follow_ = false;
  int limit_ = 50, device_index_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Cli cli;
  return cli.run(argc, argv);
}
