// A raw HTTP/1.1 client for server-sent events over loopback: sends one GET,
// reads the status and headers, decodes the chunked body and splits it into SSE
// events. Blocking with bounded waits, so a test never hangs on a silent server.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ojs::test {

struct SseEvent {
  std::string id, event, data;  // data lines joined by '\n'
};

class SseClient {
 public:
  // Connects and sends the request; headers: extra request headers ("Name: value").
  SseClient(std::uint16_t port, const std::string& target, const std::vector<std::string>& headers = {});
  ~SseClient();
  SseClient(const SseClient&) = delete;
  SseClient& operator=(const SseClient&) = delete;

  // Reads until the response head is in (or the time is up): the status, 0 on failure.
  int status(std::chrono::milliseconds wait = std::chrono::seconds(10));
  std::string header(const std::string& lower_name) const;
  std::string error_body();  // the body of a non-200 answer

  // The next event (comments are skipped, but counted), or nullopt when the
  // stream ended or nothing came in `wait`.
  std::optional<SseEvent> next(std::chrono::milliseconds wait = std::chrono::seconds(20));
  int comments() const { return comments_; }  // ":heartbeat" and friends seen so far
  bool ended() const { return ended_; }        // last chunk or EOF seen
  bool ended_cleanly() const { return last_chunk_; }  // the chunked body's last chunk came
  // Waits for the end of the response (last chunk or EOF); false if it did not come.
  bool wait_end(std::chrono::milliseconds wait);
  void close();

 private:
  bool fill(std::chrono::steady_clock::time_point deadline);  // reads more raw bytes; false on EOF/timeout
  bool decode();  // moves whole chunks from raw_ to body_

  int fd_ = -1;
  int status_ = 0;
  bool head_done_ = false, chunked_ = false, ended_ = false, eof_ = false, last_chunk_ = false;
  std::map<std::string, std::string> headers_;
  std::string raw_, body_;
  int comments_ = 0;
};

}  // namespace ojs::test
