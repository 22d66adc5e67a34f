// A JSON Schema `pattern` from an untrusted schema, checked in bounded time and
// stack: libstdc++'s default regex engine backtracks recursively (one frame per
// character: a few thousand characters overflow a fiber's stack, and nested
// quantifiers take exponential time). This one runs the same ECMAScript pattern on
// the engine's breadth-first executor, one pass over the text, and refuses what
// that executor cannot run (back-references, look-arounds).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace ojs {

class BoundedPattern {
 public:
  // Throws std::invalid_argument naming what is wrong (too long, not a regex, a
  // feature it cannot run in bounded time).
  explicit BoundedPattern(const std::string& pattern);
  ~BoundedPattern();
  BoundedPattern(BoundedPattern&&) noexcept;

  // Whether the pattern matches anywhere in `text` (JSON Schema's unanchored rule).
  bool found_in(std::string_view text) const;
  // What one character of text costs to check, roughly the engine's states.
  std::size_t weight() const { return weight_; }
  const std::string& source() const { return source_; }

  static constexpr std::size_t kMaxLength = 512;   // characters of pattern
  static constexpr std::size_t kMaxWeight = 4096;  // states, counted repetitions expanded

 private:
  struct Compiled;
  std::string source_;
  std::size_t weight_ = 0;
  std::unique_ptr<Compiled> compiled_;
};

// The work one document's pattern checks may take (text length times pattern
// weight, summed): a check beyond it fails. Set around a validation on this thread.
class PatternBudget {
 public:
  explicit PatternBudget(std::size_t units);
  ~PatternBudget();
  PatternBudget(const PatternBudget&) = delete;
  PatternBudget& operator=(const PatternBudget&) = delete;
  // Takes `units` from the budget of this thread; false when they are not left.
  static bool take(std::size_t units);

 private:
  std::size_t* previous_;
  std::size_t left_;
};

}  // namespace ojs
