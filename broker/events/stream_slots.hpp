// The open server-sent-event streams of one broker, of every kind (event streams and
// log follows), counted against one limit (--max-event-streams). A slot is held by
// its subscription and given back when the stream ends or its client goes.
#pragma once
#include <atomic>
#include <cstddef>
#include <memory>

namespace ojs::broker {

class StreamSlots {
 public:
  explicit StreamSlots(std::size_t limit) : limit_(limit), taken_(std::make_shared<std::atomic<std::size_t>>(0)) {}
  // A slot while the handle lives; nullptr when `limit` are taken.
  std::shared_ptr<void> take() {
    auto n = taken_;
    if (n->fetch_add(1) >= limit_) {
      n->fetch_sub(1);
      return nullptr;
    }
    return std::shared_ptr<void>(n.get(), [n](void*) { n->fetch_sub(1); });  // not null: a taken slot tests true
  }
  std::size_t limit() const { return limit_; }
  std::size_t taken() const { return taken_->load(); }

 private:
  const std::size_t limit_;
  std::shared_ptr<std::atomic<std::size_t>> taken_;  // shared with the handles: they may outlive this
};

}  // namespace ojs::broker
