// loadgen's HTTP client for its hot phases (PUSH, FETCH, ACK, ACK-with-fetch): one
// HTTP/1.1 keep-alive connection over a plain asio TCP socket, each request written and
// its response read with Boost.Beast's synchronous API (the broker's own HTTP library).
//
// Why not ojs::HttpClient (libcurl, the worker agent's and ojsctl's client): loadgen
// runs beside the broker and its Redis on the same cores, and every µs of CPU it spends
// per job is a µs the broker lacks. curl's per-request reset, options, URL parse and
// header list cost loadgen ~200 µs of CPU per PUSH+FETCH+ACK job on the 2-core bench
// machine (docs/benchmarks.md "Measured once, behind a design choice"). Everything else in
// loadgen (queue stats) still goes through ojs::HttpClient.
//
// Plain http only (loadgen measures a broker on this machine). One instance per thread.
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include "ojs/client/http_client.hpp"  // HttpResponse

namespace ojs::bench {

class BeastClient {
 public:
  // base_url: "http://host:port" (a path prefix is kept); throws std::invalid_argument
  // for any other scheme. Connects on the first request, not here.
  // `timeout`: the longest wait for the server's next bytes before a request fails.
  explicit BeastClient(const std::string& base_url, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~BeastClient();
  BeastClient(const BeastClient&) = delete;
  BeastClient& operator=(const BeastClient&) = delete;

  // POSTs `body` (Content-Type application/openjobspec+json, as ojs::HttpClient sends)
  // to base_url + path. status 0 with transport_error set when no response came
  // (refused, closed, timed out); headers stay empty. A connection the server closed
  // (Connection: close, or an error) is opened again on the next request; a request
  // that finds its kept-alive connection closed before any byte of an answer is sent
  // once more on a new one.
  HttpResponse post(const std::string& path, const std::string& body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ojs::bench
