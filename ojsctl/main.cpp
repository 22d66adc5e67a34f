// ojsctl: CLI for admins and users of the broker, after kubectl's conventions (verb
// then object, `-o table|json|name`, `logs -f`, `--tail`) with Slurm's words for
// the job verbs (scontrol hold / release / update).
//   ojsctl [--url URL] [--token T] [--ca-file F] [-o table|json|name] <command>
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ojsctl: jobs, logs, workers, queues, budgets and diagnosis for the OJS GPU broker"};
  ojs::HttpClientOptions options;
  options.base_url = env_or("OJS_URL", "http://127.0.0.1:8080");
  options.bearer_token = env_or("OJS_TOKEN", "");
  bool raw_json = false;
  std::string output = "table";
  app.add_option("--url", options.base_url, "Broker base URL (env OJS_URL)")->capture_default_str();
  app.add_option("--token", options.bearer_token, "Bearer token (env OJS_TOKEN)");
  app.add_option("--ca-file", options.ca_file, "Trust this CA bundle for https");
  app.add_option("--output,-o", output, "table (for people), json (the broker's answer), name (ids only, for scripts)")
      ->check(CLI::IsMember({"table", "json", "name"}))
      ->capture_default_str();
  app.add_flag("--json", raw_json, "The same as -o json");
  app.require_subcommand(1);

  std::string name, file, job_id, state = "available";
  std::optional<long long> expected_version;
  bool repair = false;
  int limit = 50;
  std::function<void(Broker&)> action;
  // One job's envelope as -o asks: a table row, the JSON, or its id.
  const auto print_job = [&](const json& job) {
    if (raw_json) std::cout << job.dump(2) << "\n";
    else if (output == "name") std::cout << job.value("id", "") << "\n";
    else std::cout << ojsctl::render_job(job);
  };

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

  // ---- jobs (issue #33) ----
  std::string type, args_json = "[]", gpu_type, priority_class, since;
  std::optional<int> priority, gpus, page;
  std::optional<long long> tail;
  std::vector<std::string> sets;
  bool follow = false;
  const auto add_attribute_options = [&](CLI::App* cmd) {
    cmd->add_option("--priority", priority, "Priority (-100 .. 100, higher first)");
    cmd->add_option("--priority-class", priority_class, "ext_ml_priority_class (spot, on-demand, reserved)");
    cmd->add_option("--set", sets, "KEY=VALUE: any ext_ml_* attribute (VALUE as JSON when it parses); repeatable");
  };
  const auto attributes = [&](json& body) {
    if (priority) body["priority"] = *priority;
    if (!priority_class.empty()) body["ext_ml_priority_class"] = priority_class;
    apply_sets(body, sets);
  };

  auto* push = app.add_subcommand("push", "Submit a job (like sbatch / kubectl create)");
  push->add_option("--file,-f", file, "The job as JSON (flags below override its fields)");
  push->add_option("--type", type, "Job type, e.g. ml.train");
  push->add_option("--queue,-q", name, "Queue (default: the file's, else default)");
  push->add_option("--args", args_json, "Arguments as a JSON array")->capture_default_str();
  push->add_option("--gpus", gpus, "ext_ml_gpu_count");
  push->add_option("--gpu-type", gpu_type, "ext_ml_gpu_type, e.g. nvidia-h100");
  add_attribute_options(push);
  push->callback([&] {
    action = [&](Broker& b) {
      json body = file.empty() ? json::object() : json::parse(read_file(file), nullptr, false);
      if (!body.is_object()) throw Failure{2, file + " is not a JSON object"};
      if (!type.empty()) body["type"] = type;
      if (!body.contains("args") || push->count("--args")) {
        body["args"] = json::parse(args_json, nullptr, false);
        if (!body["args"].is_array()) throw Failure{2, "--args must be a JSON array"};
      }
      if (!name.empty()) body["options"]["queue"] = name;
      if (gpus) body["ext_ml_gpu_count"] = *gpus;
      if (!gpu_type.empty()) body["ext_ml_gpu_type"] = gpu_type;
      attributes(body);
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
    auto* cmd = app.add_subcommand(v.name, v.help);
    cmd->add_option("JOB_ID", job_id, "Job id")->required();
    cmd->callback([&, v] {
      action = [&, v](Broker& b) {
        std::string path = std::string("/ojs/v1/") + v.path;
        if (const auto at = path.find("ID"); at != std::string::npos) path.replace(at, 2, job_id);
        else path += job_id;
        print_job(b.call(v.method, path, std::string(v.method) == "POST" ? "{}" : "")["job"]);
      };
    });
  }
  auto* update = app.add_subcommand("update", "Change a waiting job's priority or ext_ml_* attributes (scontrol update)");
  update->add_option("JOB_ID", job_id, "Job id")->required();
  add_attribute_options(update);
  update->callback([&] {
    action = [&](Broker& b) {
      json body = json::object();
      attributes(body);
      if (body.empty()) throw Failure{2, "nothing to change: --priority, --priority-class or --set"};
      print_job(b.call("PATCH", "/ojs/v1/jobs/" + job_id, body.dump())["job"]);
    };
  });

  auto* logs = app.add_subcommand("logs", "A job's stdout and stderr (kubectl logs)");
  logs->add_option("JOB_ID", job_id, "Job id")->required();
  logs->add_flag("--follow,-f", follow, "Keep printing until the job ends");
  logs->add_option("--tail", tail, "Only the last N lines");
  logs->add_option("--since", since, "Only after this cursor (a `next` of -o json) or RFC 3339 time");
  logs->callback([&] {
    action = [&](Broker& b) {
      std::string query;
      if (tail) query += "&tail=" + std::to_string(*tail);
      if (!since.empty()) query += "&since=" + since;
      const std::string path = "/ojs/v1/jobs/" + job_id + "/logs";
      const auto page = b.call("GET", path + (query.empty() ? "" : "?" + query.substr(1)));  // 404, 403 before streaming
      if (!follow) {
        if (raw_json) std::cout << page.dump(2) << "\n";
        else for (const auto& e : page["entries"]) std::cout << e["data"].get<std::string>();
        return;
      }
      std::string end_state;
      b.events(path + "?follow=true" + (query.empty() ? "" : query), [&](const std::string& event, const std::string& data) {
        const auto d = json::parse(data, nullptr, false);
        if (raw_json) std::cout << d.dump() << "\n";
        else if (event == "log" && d.is_object()) std::cout << d.value("data", "");
        std::cout.flush();
        if (event == "end" && d.is_object() && d["state"].is_string()) end_state = d["state"].get<std::string>();
        return event != "end";
      });
      if (!end_state.empty() && end_state != "completed") throw Failure{kExitEndedBadly, ""};
    };
  });

  auto* watch = app.add_subcommand("watch", "Print a job's state changes until it ends (kubectl get -w)");
  watch->add_option("JOB_ID", job_id, "Job id")->required();
  watch->callback([&] {
    action = [&](Broker& b) {
      const auto job = b.call("GET", "/ojs/v1/jobs/" + job_id)["job"];
      std::string last = job.value("state", "");
      const auto line = [&](const std::string& time, const std::string& what, const json& event) {
        if (raw_json) std::cout << event.dump() << "\n";
        else if (output != "name") std::cout << time << "  " << what << "\n";
        std::cout.flush();
      };
      line(job.value("enqueued_at", job.value("created_at", "")), "state " + last, job);
      if (!is_terminal(last)) {
        b.events("/ojs/v1/jobs/" + job_id + "/events", [&](const std::string& event, const std::string& data) {
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
      if (output == "name") std::cout << last << "\n";
      if (is_terminal(last) && last != "completed") throw Failure{kExitEndedBadly, ""};
    };
  });

  auto* jobs = app.add_subcommand("jobs", "Jobs")->require_subcommand(1);
  auto* jobs_list = jobs->add_subcommand("list", "Jobs in one state, across queues or in one (squeue / kubectl get jobs)");
  jobs_list->add_option("QUEUE", name, "Queue (default: all)");
  jobs_list->add_option("--state", state,
                        "available, active, scheduled, retryable, dead, completed, discarded or cancelled")->capture_default_str();
  jobs_list->add_option("--type", type, "Job type, exact or a prefix ending in *");
  jobs_list->add_option("--limit", limit, "At most this many per page (1 .. 100)")->capture_default_str()->check(CLI::Range(1, 100));
  jobs_list->add_option("--page", page, "Page (from 1)");
  jobs_list->callback([&] {
    action = [&](Broker& b) {
      std::string path = "/ojs/v1/admin/jobs?state=" + state + "&per_page=" + std::to_string(limit);
      if (!name.empty()) path += "&queue=" + name;
      if (!type.empty()) path += "&type=" + type;
      if (page) path += "&page=" + std::to_string(*page);
      const auto r = b.call("GET", path);
      if (raw_json) std::cout << r.dump(2) << "\n";
      else if (output == "name") for (const auto& j : r["items"]) std::cout << j.value("id", "") << "\n";
      else std::cout << ojsctl::render_jobs(r);
    };
  });

  auto* dead = app.add_subcommand("dead-letter", "The dead letter queue")->require_subcommand(1);
  auto* dead_list = dead->add_subcommand("list", "Dead-lettered jobs, newest first");
  dead_list->add_option("--queue,-q", name, "Only this queue");
  dead_list->add_option("--limit", limit, "At most this many")->capture_default_str()->check(CLI::Range(1, 1000));
  dead_list->callback([&] {
    action = [&](Broker& b) {
      const auto r = b.call("GET", "/ojs/v1/admin/dead-letter?limit=" + std::to_string(limit) + (name.empty() ? "" : "&queue=" + name));
      if (raw_json) std::cout << r.dump(2) << "\n";
      else if (output == "name") for (const auto& j : r["items"]) std::cout << j.value("id", "") << "\n";
      else std::cout << ojsctl::render_jobs(r);
    };
  });
  auto* dead_retry = dead->add_subcommand("retry", "Make a dead-lettered job available again (attempts reset)");
  dead_retry->add_option("JOB_ID", job_id, "Job id")->required();
  dead_retry->callback([&] {
    action = [&](Broker& b) { print_job(b.call("POST", "/ojs/v1/admin/dead-letter/" + job_id + "/retry", "{}")["job"]); };
  });
  auto* dead_delete = dead->add_subcommand("delete", "Delete a dead-lettered job");
  dead_delete->add_option("JOB_ID", job_id, "Job id")->required();
  dead_delete->callback([&] {
    action = [&](Broker& b) {
      const auto r = b.call("DELETE", "/ojs/v1/admin/dead-letter/" + job_id);
      if (raw_json) std::cout << r.dump(2) << "\n";
      else std::cout << (output == "name" ? job_id : "job " + job_id + " deleted") << "\n";
    };
  });

  // [usage] sreport-style resource use (GET /ojs/v1/admin/usage); times RFC 3339.
  auto* usage = app.add_subcommand("usage", "Resource-hours used by tenant, queue, job type or worker (sreport)");
  std::string from, to, by = "tenant";
  usage->add_option("--from", from, "Start, RFC 3339 (default: 24 hours before --to)");
  usage->add_option("--to", to, "End, RFC 3339 (default: now)");
  usage->add_option("--by", by, "Group by")->check(CLI::IsMember({"tenant", "queue", "type", "worker"}))->capture_default_str();
  usage->add_option("--queue,-q", name, "Only this queue");
  usage->callback([&] {
    action = [&](Broker& b) {
      // '+' of a time zone offset must not read as a space in a query.
      const auto param = [](const std::string& v) {
        std::string out;
        for (const char c : v) out += c == '+' ? std::string("%2B") : std::string(1, c);
        return out;
      };
      std::string path = "/ojs/v1/admin/usage?by=" + by;
      if (!from.empty()) path += "&from=" + param(from);
      if (!to.empty()) path += "&to=" + param(to);
      if (!name.empty()) path += "&queue=" + name;
      const auto r = b.call("GET", path);
      if (raw_json) std::cout << r.dump(2) << "\n";
      else if (output == "name") for (const auto& row : r["rows"]) std::cout << row.value(by, "") << "\n";
      else std::cout << ojsctl::render_usage(r);
    };
  });

  auto* completion = app.add_subcommand("completion", "Print a shell completion script (bash): source <(ojsctl completion bash)");
  std::string shell = "bash";
  completion->add_option("SHELL", shell, "bash")->check(CLI::IsMember({"bash"}));
  completion->callback([&] {
    action = [&](Broker&) {
      std::string words;
      for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; })) words += sub->get_name() + " ";
      std::cout << "_ojsctl() {\n  local cur=${COMP_WORDS[COMP_CWORD]}\n  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
                << "    COMPREPLY=($(compgen -W \"" << words << "\" -- \"$cur\"))\n  fi\n}\ncomplete -F _ojsctl ojsctl\n";
    };
  });

  CLI11_PARSE(app, argc, argv);
  if (output == "json") raw_json = true;
  try {
    Broker broker(options);
    if (action) action(broker);
  } catch (const Failure& f) {
    if (!f.message.empty()) std::cerr << "ojsctl: " << f.message << "\n";
    return f.code;
  }
  return 0;
}
