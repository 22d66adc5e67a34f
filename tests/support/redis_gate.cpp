#include "support/redis_gate.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

namespace ojs::test {

namespace {
bool send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const auto n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}
}  // namespace

RedisGate::RedisGate(std::uint16_t redis_port) : redis_port_(redis_port) {
  listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener_, 64) != 0)
    throw std::runtime_error("RedisGate: cannot listen on loopback");
  socklen_t len = sizeof addr;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

RedisGate::~RedisGate() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    released_ = true;
    for (const int fd : fds_) ::shutdown(fd, SHUT_RDWR);
  }
  changed_.notify_all();
  ::shutdown(listener_, SHUT_RDWR);
  ::close(listener_);
  acceptor_.join();
  for (auto& t : threads_) t.join();
  for (const int fd : fds_) ::close(fd);
}

void RedisGate::hold(const std::string& pattern) {
  std::lock_guard lock(mutex_);
  pattern_ = pattern;
  armed_ = true;
  held_ = released_ = false;
}

bool RedisGate::wait_held(int timeout_ms) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return held_; });
}

void RedisGate::release() {
  {
    std::lock_guard lock(mutex_);
    released_ = true;
  }
  changed_.notify_all();
}

void RedisGate::accept_loop() {
  while (!stopping_) {
    const int client = ::accept(listener_, nullptr, nullptr);
    if (client < 0) return;
    const int server = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(redis_port_);
    if (server < 0 || ::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(client);
      if (server >= 0) ::close(server);
      continue;
    }
    std::lock_guard lock(mutex_);
    if (stopping_) {
      ::close(client);
      ::close(server);
      return;
    }
    fds_.push_back(client);
    fds_.push_back(server);
    threads_.emplace_back([this, client, server] { relay(client, server); });
  }
}

void RedisGate::relay(int client, int server) {
  pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
  char buffer[65536];
  while (!stopping_) {
    if (::poll(fds, 2, -1) < 0) return;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const auto n = ::recv(fds[i].fd, buffer, sizeof buffer, 0);
      if (n <= 0) {
        ::shutdown(fds[1 - i].fd, SHUT_RDWR);
        return;
      }
      if (i == 0) {  // client -> server: the one place a chunk may wait
        std::unique_lock lock(mutex_);
        if (armed_ && std::string_view(buffer, static_cast<std::size_t>(n)).find(pattern_) != std::string_view::npos) {
          armed_ = false;
          held_ = true;
          changed_.notify_all();
          changed_.wait(lock, [this] { return released_; });
        }
      }
      if (!send_all(fds[1 - i].fd, buffer, static_cast<std::size_t>(n))) return;
    }
  }
}

}  // namespace ojs::test
