#include "executor.hpp"

#include "json_path.hpp"
#include "matchers.hpp"
#include "templates.hpp"
#include "text.hpp"

#include "ojs/client/http_client.hpp"

#include <algorithm>
#include <chrono>
#include <latch>
#include <ostream>
#include <set>
#include <stdexcept>
#include <thread>

namespace ojs::conformance {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct StepFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void require(const MatchResult& result) {
  if (!result) throw StepFailure(result.message());
}

struct Response {
  long status = 0;
  std::string raw;
  std::map<std::string, std::string> headers;
  std::string transport_error;
  json body;              // parsed body, null when empty or not JSON
  bool has_body = false;  // body holds parsed JSON
  double ms = 0;
  const json* body_ptr() const { return has_body ? &body : nullptr; }
};

struct Prepared {
  const Step* step = nullptr;
  std::optional<HttpCall> call;  // absent for WAIT and ASSERT
};

bool is_terminal(const std::string& state) {
  return state == "completed" || state == "cancelled" || state == "discarded";
}

class CaseRun {
 public:
  CaseRun(const Case& kase, const RunOptions& options, std::ostream* log)
      : case_(kase), options_(options), log_(options.verbose ? log : nullptr), client_(client_options()) {}

  CaseReport run() {
    const auto start = Clock::now();
    CaseReport report;
    report.file = case_.file;
    report.test_id = case_.test_id;
    report.name = case_.name;
    std::set<std::string> done;
    for (std::size_t i = 0; i < case_.steps.size() && report.failure.empty(); ++i) {
      if (done.contains(case_.steps[i].id)) continue;
      const auto group = group_of(i, done);
      run_group(group, report);
      for (const Step* step : group) done.insert(step->id);
    }
    report.passed = report.failure.empty();
    cleanup(report);
    report.ms = ms_since(start);
    return report;
  }

 private:
  HttpClientOptions client_options() const {
    HttpClientOptions o;
    o.base_url = options_.base_url;
    o.bearer_token = options_.token;
    o.timeout_ms = options_.timeout_ms;
    return o;
  }

  // The step at `index` plus every not-yet-run step linked to it by parallel_with.
  std::vector<const Step*> group_of(std::size_t index, const std::set<std::string>& done) const {
    std::set<std::string> members{case_.steps[index].id};
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& s : case_.steps) {
        if (done.contains(s.id) || members.contains(s.id)) continue;
        const bool linked = members.contains(s.parallel_with) ||
                            std::any_of(case_.steps.begin(), case_.steps.end(), [&](const Step& m) {
                              return members.contains(m.id) && m.parallel_with == s.id;
                            });
        if (linked) grew = members.insert(s.id).second;
      }
    }
    std::vector<const Step*> group;
    for (const auto& s : case_.steps) {
      if (members.contains(s.id)) group.push_back(&s);
    }
    return group;
  }

  void run_group(const std::vector<const Step*>& group, CaseReport& report) {
    std::vector<Prepared> prepared;
    std::vector<StepReport> reports;
    for (const Step* step : group) {
      reports.emplace_back();
      reports.back().id = step->id;
      reports.back().action = step->action;
      try {
        prepared.push_back(prepare(*step));
        if (prepared.back().call) reports.back().call = prepared.back().call->describe();
      } catch (const std::exception& e) {
        fail(report, reports.back(), e.what());
        return;
      }
    }
    std::vector<Response> responses(prepared.size());
    if (prepared.size() == 1) {
      responses[0] = perform(prepared[0], client_);
    } else {
      std::latch start(static_cast<std::ptrdiff_t>(prepared.size()));
      std::vector<std::thread> threads;
      for (std::size_t k = 0; k < prepared.size(); ++k) {
        threads.emplace_back([&, k] {
          HttpClient own(client_options());
          start.arrive_and_wait();
          responses[k] = perform(prepared[k], own);
        });
      }
      for (auto& t : threads) t.join();
    }
    for (std::size_t k = 0; k < prepared.size(); ++k) {
      reports[k].status = responses[k].status;
      reports[k].ms = responses[k].ms;
      try {
        evaluate(prepared[k], responses[k]);
        report.steps.push_back(reports[k]);
      } catch (const std::exception& e) {
        fail(report, reports[k], e.what());
        return;
      }
    }
  }

  static void fail(CaseReport& report, StepReport& step, const std::string& why) {
    step.ok = false;
    step.failure = why;
    report.steps.push_back(step);
    report.failed_step = step.id;
    report.failure = why;
  }

  Prepared prepare(const Step& step) const {
    Prepared p{&step, std::nullopt};
    if (step.kind != StepKind::Http) return p;
    if (step.def) {
      p.call = step.def->build(resolve(step.spec.value("request", json()), scope_));
      if (step.spec.contains("headers")) {
        for (auto& line : header_lines(resolve(step.spec.at("headers"), scope_))) p.call->headers.push_back(line);
      }
    } else {
      p.call = build_http_step(resolve(step.spec, scope_));
    }
    return p;
  }

  Response perform(const Prepared& p, HttpClient& client) const {
    const Step& step = *p.step;
    if (step.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step.delay_ms));
    Response r;
    const auto start = Clock::now();
    if (step.kind == StepKind::Wait) std::this_thread::sleep_for(std::chrono::milliseconds(step.wait_ms));
    if (p.call) {
      auto http = client.request(p.call->method, p.call->path, p.call->body.value_or(""), p.call->headers);
      r.status = http.status;
      r.raw = std::move(http.body);
      r.headers = std::move(http.headers);
      r.transport_error = std::move(http.transport_error);
      const bool blank = r.raw.find_first_not_of(" \t\r\n") == std::string::npos;
      const bool substitute = blank && r.status != 0 && step.def && !step.def->empty_body_means.empty();
      json parsed = json::parse(substitute ? std::string(step.def->empty_body_means) : r.raw, nullptr, false);
      r.has_body = !parsed.is_discarded();
      if (r.has_body) r.body = std::move(parsed);
    }
    r.ms = ms_since(start);
    return r;
  }

  void evaluate(const Prepared& p, const Response& r) {
    const Step& step = *p.step;
    if (step.kind == StepKind::Wait) return log("[" + step.id + "] waited " + std::to_string(step.wait_ms) + " ms");
    if (step.kind == StepKind::Assert) return evaluate_assert(step);
    const HttpCall& call = *p.call;
    log("[" + step.id + "] " + call.describe() + (call.body ? " " + clip(*call.body, 300) : ""));
    log("[" + step.id + "] <- " + std::to_string(r.status) + " (" + std::to_string(int(r.ms)) + " ms) " + clip(r.raw, 300));
    scope_.record_response(step.id, r.status, r.headers, r.body);
    track_jobs(call, r);
    if (r.status == 0) throw StepFailure(call.describe() + " failed: " + r.transport_error);
    const json& expect = step.expect;
    if (expect.is_object()) {
      if (expect.contains("status")) require(check_status(resolve(expect.at("status"), scope_), r.status));
      if (expect.contains("headers")) require(check_headers(resolve(expect.at("headers"), scope_), r.headers));
      if (expect.contains("body")) {
        const json pattern = resolve(expect.at("body"), scope_, {Unresolved::Fail, true});
        require(check_body_pattern(pattern, r.body_ptr(), r.raw));
      }
    }
    store_values(step, r);
  }

  void evaluate_assert(const Step& step) const {
    const json& spec = step.expect;
    if (spec.contains("equality")) {
      const json resolved = resolve(spec.at("equality"), scope_, {Unresolved::Fail, true});
      require(check_body_assertions(resolved, &scope_.document(), "{}"));
    }
    if (spec.contains("exclusive_claim")) {
      require(check_exclusive_claim(resolve(spec.at("exclusive_claim"), scope_, {Unresolved::Null, false})));
    }
  }

  // `store` (dialect B: paths relative to the unwrapped job, falling back to the
  // body) and `captures` (dialect A: "$." paths from the body root; the extension
  // cases spell it `capture`); all feed $ref.
  void store_values(const Step& step, const Response& r) {
    for (const char* key : {"store", "captures", "capture"}) {
      if (!step.spec.contains(key)) continue;
      for (const auto& [name, path_value] : step.spec.at(key).items()) {
        const auto path = path_value.get<std::string>();
        const json* found = nullptr;
        if (r.has_body) {
          const json pattern = step.expect.is_object() ? step.expect.value("body", json()) : json();
          const json* target = is_json_path(path) ? &r.body : unwrap_job(r.body, pattern);
          if (target) found = lookup(*target, path);
          if (!found) found = lookup(r.body, path);
          // The durable-execution cases capture "$.id" from a PUSH reply ({job: {...}}):
          // a "$." path missing at the body root is looked up in the job too.
          if (!found && is_json_path(path))
            if (const json* job = unwrap_job(r.body, json::object()); job && job != &r.body) found = lookup(*job, path);
        }
        if (!found) throw StepFailure(std::string(key) + " " + name + ": '" + path + "' not found in the response");
        scope_.store(name, *found);
      }
    }
  }

  void track_jobs(const HttpCall& call, const Response& r) {
    if (call.method != "POST" || r.status < 200 || r.status >= 300 || !r.has_body || !r.body.is_object()) return;
    const std::string path = call.path.substr(0, call.path.find('?'));
    if (path != "/ojs/v1/jobs" && path != "/ojs/v1/jobs/batch") return;
    const auto add = [this](const json& job) {
      if (job.is_object() && job.contains("id") && job.at("id").is_string()) created_.push_back(job.at("id").get<std::string>());
    };
    if (r.body.contains("job")) add(r.body.at("job"));
    if (r.body.contains("jobs") && r.body.at("jobs").is_array()) {
      for (const auto& job : r.body.at("jobs")) add(job);
    }
  }

  void cleanup(CaseReport& report) {
    std::set<std::string> seen;
    for (const auto& id : created_) {
      if (!seen.insert(id).second) continue;
      const auto info = client_.get(job_path(id));
      if (info.status == 404) continue;
      const json body = json::parse(info.body, nullptr, false);
      const json* state = body.is_discarded() ? nullptr : lookup(body, "$.job.state");
      if (!state && !body.is_discarded()) state = lookup(body, "$.state");
      const std::string current = state && state->is_string() ? state->get<std::string>() : "unknown";
      if (is_terminal(current)) continue;
      const auto cancel = client_.request("DELETE", job_path(id));
      const bool ok = cancel.status >= 200 && cancel.status < 300;
      report.cleanup.push_back((ok ? "cancelled " : "could not cancel ") + id + " (was " + current + ", DELETE -> " +
                               std::to_string(cancel.status) + ")");
      log("[cleanup] " + report.cleanup.back());
    }
  }

  void log(const std::string& line) const {
    if (log_) *log_ << "      " << line << '\n';
  }

  const Case& case_;
  const RunOptions& options_;
  std::ostream* log_;
  HttpClient client_;
  Scope scope_;
  std::vector<std::string> created_;
};

}  // namespace

CaseReport run_case(const Case& kase, const RunOptions& options, std::ostream* log) {
  return CaseRun(kase, options, log).run();
}

CaseReport load_failure(const std::string& file, const std::string& error) {
  CaseReport report;
  report.file = file;
  report.test_id = std::filesystem::path(file).stem().string();
  report.name = "(not loaded)";
  report.failure = "cannot load case: " + error;
  return report;
}

}  // namespace ojs::conformance
