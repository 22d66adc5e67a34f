#include "ojs/core/bounded_pattern.hpp"

#include <algorithm>
#include <regex>
#include <stdexcept>
#include <vector>

namespace ojs {

namespace {

// The breadth-first executor: polynomial time, recursion bounded by the pattern.
constexpr auto kFlags = std::regex::ECMAScript | std::regex_constants::__polynomial;

std::size_t capped(std::size_t n) { return std::min(n, BoundedPattern::kMaxWeight + 1); }

// A counted repetition "{m}", "{m,}" or "{m,n}" at `at`: the most copies it makes
// and the index of its '}'; 0 copies when it is not one (then '{' is a literal).
std::pair<std::size_t, std::size_t> repetition(const std::string& p, std::size_t at) {
  std::size_t i = at + 1, low = 0, high = 0;
  bool digits = false, comma = false, high_digits = false;
  for (; i < p.size() && p[i] != '}'; ++i) {
    const char c = p[i];
    if (c >= '0' && c <= '9') {
      (comma ? high : low) = capped((comma ? high : low) * 10 + static_cast<std::size_t>(c - '0'));
      (comma ? high_digits : digits) = true;
    } else if (c == ',' && !comma) {
      comma = true;
    } else {
      return {0, at};
    }
  }
  if (i >= p.size() || !digits) return {0, at};
  const std::size_t copies = comma ? (high_digits ? std::max(low, high) : low + 1) : low;
  return {std::max<std::size_t>(copies, 1), i};
}

// Roughly the engine's states: each atom counts one, a counted repetition counts
// what it repeats once per copy. Look-arounds are refused here: the executor
// would run each as a search of its own from every position.
std::size_t weigh(const std::string& p) {
  std::vector<std::size_t> open{0};  // weight of each open group
  std::size_t last = 0;              // weight of the last atom, what a quantifier repeats
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    std::size_t atom = 1;
    if (c == '\\') {
      ++i;
    } else if (c == '[') {
      std::size_t j = i + 1;
      if (j < p.size() && p[j] == '^') ++j;
      if (j < p.size() && p[j] == ']') ++j;
      while (j < p.size() && p[j] != ']') j += p[j] == '\\' ? 2 : 1;
      i = j;
    } else if (c == '(') {
      if (p.compare(i, 3, "(?=") == 0 || p.compare(i, 3, "(?!") == 0 || p.compare(i, 3, "(?<") == 0)
        throw std::invalid_argument("uses a look-around, which cannot be checked in bounded time");
      if (p.compare(i, 3, "(?:") == 0) i += 2;
      open.push_back(0);
      continue;
    } else if (c == ')') {
      if (open.size() < 2) continue;  // unbalanced: the compiler names it
      atom = capped(open.back() + 1);
      open.pop_back();
    } else if (c == '{') {
      const auto [copies, close] = repetition(p, i);
      if (copies > 0) {
        open.back() = capped(open.back() + last * (copies - 1));
        last = capped(last * copies);
        i = close;
        continue;
      }
    } else if (c == '*' || c == '+' || c == '?' || c == '|') {
      open.back() = capped(open.back() + 1);
      continue;
    }
    last = atom;
    open.back() = capped(open.back() + atom);
  }
  std::size_t total = 0;
  for (auto w : open) total = capped(total + w);
  return total;
}

std::regex compile(const std::string& pattern) {
  try {
    return std::regex(pattern, kFlags);
  } catch (const std::regex_error& e) {
    if (e.code() == std::regex_constants::error_backref)
      throw std::invalid_argument("uses a back-reference, which cannot be checked in bounded time");
    if (e.code() == std::regex_constants::error_complexity)
      throw std::invalid_argument("is too large once its counted repetitions are expanded");
    throw std::invalid_argument(std::string("is not an ECMAScript regular expression (") + e.what() + ")");
  }
}

thread_local std::size_t* budget_left = nullptr;

}  // namespace

struct BoundedPattern::Compiled {
  std::regex anywhere;
};

BoundedPattern::BoundedPattern(const std::string& pattern) : source_(pattern) {
  if (pattern.size() > kMaxLength) throw std::invalid_argument("is longer than " + std::to_string(kMaxLength) + " characters");
  weight_ = weigh(pattern);
  if (weight_ > kMaxWeight)
    throw std::invalid_argument("is too large once its counted repetitions are expanded (more than " + std::to_string(kMaxWeight) + " states)");
  compile(pattern);  // alone first: a pattern like "a)(b" must not become valid once wrapped
  // A search as one match: whatever precedes and follows, in one pass over the text.
  compiled_ = std::make_unique<Compiled>(Compiled{compile("[\\s\\S]*(?:" + pattern + ")[\\s\\S]*")});
}

BoundedPattern::~BoundedPattern() = default;
BoundedPattern::BoundedPattern(BoundedPattern&&) noexcept = default;

bool BoundedPattern::found_in(std::string_view text) const {
  return std::regex_match(text.begin(), text.end(), compiled_->anywhere);
}

PatternBudget::PatternBudget(std::size_t units) : previous_(budget_left), left_(units) { budget_left = &left_; }
PatternBudget::~PatternBudget() { budget_left = previous_; }

bool PatternBudget::take(std::size_t units) {
  if (!budget_left) return true;
  if (*budget_left < units) {
    *budget_left = 0;
    return false;
  }
  *budget_left -= units;
  return true;
}

}  // namespace ojs
