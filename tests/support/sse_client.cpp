#include "support/sse_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace ojs::test {

SseClient::SseClient(std::uint16_t port, const std::string& target, const std::vector<std::string>& headers) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("SSE connect failed");
  std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n";
  for (const auto& h : headers) req += h + "\r\n";
  req += "\r\n";
  if (::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) throw std::runtime_error("SSE send failed");
}

SseClient::~SseClient() { close(); }

void SseClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool SseClient::fill(std::chrono::steady_clock::time_point deadline) {
  if (fd_ < 0 || eof_) return false;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
  pollfd p{fd_, POLLIN, 0};
  if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
  char buf[16384];
  const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  raw_.append(buf, static_cast<std::size_t>(n));
  return true;
}

int SseClient::status(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!head_done_) {
    const auto end = raw_.find("\r\n\r\n");
    if (end != std::string::npos) {
      const std::string head = raw_.substr(0, end);
      raw_.erase(0, end + 4);
      std::size_t line_end = head.find("\r\n");
      const std::string status_line = head.substr(0, line_end);
      if (status_line.size() >= 12) status_ = std::stoi(status_line.substr(9, 3));
      while (line_end != std::string::npos) {
        const auto start = line_end + 2;
        line_end = head.find("\r\n", start);
        const auto line = head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), ::tolower);
        headers_[name] = line.substr(line.find_first_not_of(' ', colon + 1));
      }
      chunked_ = header("transfer-encoding") == "chunked";
      head_done_ = true;
      break;
    }
    if (!fill(deadline)) return 0;
  }
  return status_;
}

std::string SseClient::header(const std::string& lower_name) const {
  auto it = headers_.find(lower_name);
  return it == headers_.end() ? "" : it->second;
}

bool SseClient::decode() {
  if (!chunked_) {
    body_ += raw_;
    raw_.clear();
    if (eof_) ended_ = true;
    return true;
  }
  for (;;) {
    const auto crlf = raw_.find("\r\n");
    if (crlf == std::string::npos) break;
    const auto size = std::stoul(raw_.substr(0, crlf), nullptr, 16);
    if (size == 0) {
      ended_ = last_chunk_ = true;
      raw_.clear();
      break;
    }
    if (raw_.size() < crlf + 2 + size + 2) break;
    body_ += raw_.substr(crlf + 2, size);
    raw_.erase(0, crlf + 2 + size + 2);
  }
  if (eof_) ended_ = true;
  return true;
}

std::string SseClient::error_body() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  const auto length = header("content-length").empty() ? 0 : std::stoul(header("content-length"));
  while (raw_.size() < length && fill(deadline)) {
  }
  return raw_;
}

std::optional<SseEvent> SseClient::next(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  if (!head_done_ && status(wait) != 200) return std::nullopt;
  for (;;) {
    decode();
    // One event per blank-line-terminated block; comment-only blocks are skipped.
    for (auto end = body_.find("\n\n"); end != std::string::npos; end = body_.find("\n\n")) {
      const std::string block = body_.substr(0, end);
      body_.erase(0, end + 2);
      SseEvent ev;
      bool any = false;
      std::size_t start = 0;
      while (start <= block.size()) {
        auto nl = block.find('\n', start);
        if (nl == std::string::npos) nl = block.size();
        const auto line = block.substr(start, nl - start);
        start = nl + 1;
        if (line.empty()) continue;
        if (line[0] == ':') {
          ++comments_;
          continue;
        }
        const auto colon = line.find(':');
        const auto field = line.substr(0, colon);
        auto value = colon == std::string::npos ? "" : line.substr(colon + 1);
        if (!value.empty() && value[0] == ' ') value.erase(0, 1);
        if (field == "id") ev.id = value, any = true;
        else if (field == "event") ev.event = value, any = true;
        else if (field == "data") ev.data += (ev.data.empty() ? "" : "\n") + value, any = true;
      }
      if (any && !ev.event.empty()) return ev;
    }
    if (ended_) return std::nullopt;
    if (!fill(deadline)) {
      decode();
      if (body_.find("\n\n") != std::string::npos) continue;
      return std::nullopt;
    }
  }
}

bool SseClient::wait_end(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    decode();
    if (ended_) return true;
    if (!fill(deadline) && !eof_) return false;
  }
}

}  // namespace ojs::test
