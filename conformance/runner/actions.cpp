#include "actions.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace ojs::conformance {

using nlohmann::json;

namespace {

const json& require(const json& request, const char* key, const char* action) {
  if (!request.is_object() || !request.contains(key)) {
    throw std::invalid_argument(std::string(action) + ": request needs \"" + key + "\"");
  }
  return request.at(key);
}

std::string id_of(const json& request, const char* action) {
  const json& id = require(request, "id", action);
  if (!id.is_string()) throw std::invalid_argument(std::string(action) + ": request.id must be a string");
  return id.get<std::string>();
}

std::optional<std::string> body_of(const json& request) {
  if (request.is_null()) return std::string("{}");
  return request.dump();
}

HttpCall post(std::string path, const json& request) { return {"POST", std::move(path), body_of(request), {}}; }

// ACK and NACK name their job `job_id`; a request that names it `id`, as `get` and
// `cancel` do (the federation cases), means the same job.
HttpCall post_for_job(std::string path, const json& request) {
  if (!request.is_object() || !request.contains("id") || request.contains("job_id")) return post(std::move(path), request);
  json named = request;
  named["job_id"] = named["id"];
  named.erase("id");
  return post(std::move(path), named);
}

// {method?, path, body?, raw_body?, headers?}: anything the table does not cover.
HttpCall free_request(const json& request) {
  const json& path = require(request, "path", "request");
  if (!path.is_string()) throw std::invalid_argument("request: path must be a string");
  HttpCall call{request.value("method", std::string("GET")), path.get<std::string>(), std::nullopt, {}};
  if (request.contains("raw_body")) call.body = request.at("raw_body").get<std::string>();
  else if (request.contains("body")) call.body = request.at("body").dump();
  if (request.contains("headers")) call.headers = header_lines(request.at("headers"));
  return call;
}

const std::vector<ActionDef> kActions = {
    {"push", "POST /ojs/v1/jobs with the request as the job", [](const json& r) { return post("/ojs/v1/jobs", r); }},
    {"push_batch", "POST /ojs/v1/jobs/batch with the request ({\"jobs\": [...]})",
     [](const json& r) { return post("/ojs/v1/jobs/batch", r); }},
    {"get", "GET /ojs/v1/jobs/{request.id}",
     [](const json& r) { return HttpCall{"GET", job_path(id_of(r, "get")), std::nullopt, {}}; }},
    {"cancel", "DELETE /ojs/v1/jobs/{request.id}",
     [](const json& r) { return HttpCall{"DELETE", job_path(id_of(r, "cancel")), std::nullopt, {}}; }},
    {"fetch", "POST /ojs/v1/workers/fetch with the request (queues, worker_id, capabilities, ...)",
     [](const json& r) { return post("/ojs/v1/workers/fetch", r); }, R"({"jobs":[]})"},
    {"ack", "POST /ojs/v1/workers/ack with the request (`id` read as `job_id`)",
     [](const json& r) { return post_for_job("/ojs/v1/workers/ack", r); }},
    {"nack", "POST /ojs/v1/workers/nack with the request (`id` read as `job_id`)",
     [](const json& r) { return post_for_job("/ojs/v1/workers/nack", r); }},
    {"heartbeat", "POST /ojs/v1/workers/heartbeat with the request",
     [](const json& r) { return post("/ojs/v1/workers/heartbeat", r); }},
    {"checkpoint", "POST /ojs/v1/workers/checkpoint with the request",
     [](const json& r) { return post("/ojs/v1/workers/checkpoint", r); }},
    {"job_checkpoint", "POST /ojs/v1/jobs/{request.job_id}/checkpoint with the request (epoch, step, loss, storage_key, ...)",
     [](const json& r) {
       const json& id = require(r, "job_id", "job_checkpoint");
       if (!id.is_string()) throw std::invalid_argument("job_checkpoint: request.job_id must be a string");
       return post(job_path(id.get<std::string>()) + "/checkpoint", r);
     }},
    {"diagnosis", "GET /ojs/v1/jobs/{request.id}/diagnosis",
     [](const json& r) { return HttpCall{"GET", job_path(id_of(r, "diagnosis")) + "/diagnosis", std::nullopt, {}}; }},
    {"queue_config", "PUT /ojs/v1/admin/queues/{request.queue}/config with request.config",
     [](const json& r) {
       const json& queue = require(r, "queue", "queue_config");
       if (!queue.is_string()) throw std::invalid_argument("queue_config: request.queue must be a string");
       return HttpCall{"PUT", "/ojs/v1/admin/queues/" + queue.get<std::string>() + "/config",
                       require(r, "config", "queue_config").dump(), {}};
     }},
    {"health", "GET /ojs/v1/health", [](const json&) { return HttpCall{"GET", "/ojs/v1/health", std::nullopt, {}}; }},
    {"manifest", "GET /ojs/manifest", [](const json&) { return HttpCall{"GET", "/ojs/manifest", std::nullopt, {}}; }},
    {"request", "any call: {method (default GET), path, body | raw_body, headers}", free_request},
    {"admin", "same as request, for admin endpoints (e.g. PUT /ojs/v1/admin/queues/{name}/config)", free_request},
};

}  // namespace

const std::vector<ActionDef>& action_table() { return kActions; }

const ActionDef* find_action(std::string_view name) {
  const auto it = std::find_if(kActions.begin(), kActions.end(), [name](const ActionDef& a) { return a.name == name; });
  return it == kActions.end() ? nullptr : &*it;
}

bool is_http_method(std::string_view action) {
  static constexpr std::array<std::string_view, 7> kMethods = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"};
  return std::find(kMethods.begin(), kMethods.end(), action) != kMethods.end();
}

HttpCall build_http_step(const json& step) {
  HttpCall call{step.at("action").get<std::string>(), step.value("path", std::string()), std::nullopt, {}};
  if (call.path.empty()) throw std::invalid_argument("step needs a \"path\"");
  if (step.contains("raw_body")) {
    if (!step.at("raw_body").is_string()) throw std::invalid_argument("raw_body must be a string");
    call.body = step.at("raw_body").get<std::string>();
  } else if (step.contains("body")) {
    call.body = step.at("body").dump();
  }
  if (step.contains("headers")) call.headers = header_lines(step.at("headers"));
  return call;
}

std::vector<std::string> header_lines(const json& headers) {
  if (!headers.is_object()) throw std::invalid_argument("headers must be an object");
  std::vector<std::string> lines;
  for (const auto& [name, value] : headers.items()) {
    lines.push_back(name + ": " + (value.is_string() ? value.get<std::string>() : value.dump()));
  }
  return lines;
}

std::string job_path(const std::string& id) { return "/ojs/v1/jobs/" + id; }

}  // namespace ojs::conformance
