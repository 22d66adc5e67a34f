#include "broker/scheduling/cohort_shares.hpp"

#include <algorithm>
#include <limits>

namespace ojs::broker {

namespace {
constexpr long long kNoBound = std::numeric_limits<long long>::max() / 4;
long long bound(const std::optional<long long>& v) { return v ? std::max(0LL, *v) : kNoBound; }
}  // namespace

std::vector<CohortShare> cohort_shares(const std::vector<CohortMember>& members) {
  const std::size_t n = members.size();
  std::vector<CohortShare> out(n);
  std::vector<long long> lendable(n), wants(n);
  long long pool = 0, total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& m = members[i];
    out[i].queue = m.queue;
    total += m.nominal;
    const long long need = m.used + m.waiting;
    const long long own = std::min(m.nominal, need);
    lendable[i] = std::min(std::max(0LL, m.nominal - own), bound(m.lending_limit));
    wants[i] = std::min(std::max(0LL, need - m.nominal), bound(m.borrowing_limit));
    pool += lendable[i];
  }
  // Borrowing already running is kept first, so a pass does not preempt what the
  // last one placed while the pool still covers it.
  for (std::size_t i = 0; i < n && pool > 0; ++i) {
    const long long running_above = std::max(0LL, members[i].used - members[i].nominal);
    const long long keep = std::min({wants[i], running_above, pool});
    out[i].borrowed = keep;
    pool -= keep;
  }
  // New borrowing, one GPU at a time round the borrowers.
  for (bool granted = true; pool > 0 && granted;) {
    granted = false;
    for (std::size_t i = 0; i < n && pool > 0; ++i)
      if (out[i].borrowed < wants[i]) {
        ++out[i].borrowed;
        --pool;
        granted = true;
      }
  }
  // The lenders give what was borrowed, the most idle first.
  long long to_lend = 0;
  for (const auto& s : out) to_lend += s.borrowed;
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return lendable[a] > lendable[b]; });
  for (std::size_t i : order) {
    const long long give = std::min(lendable[i], to_lend);
    out[i].lent = give;
    to_lend -= give;
  }
  for (std::size_t i = 0; i < n; ++i) {
    out[i].planned = members[i].nominal - out[i].lent + out[i].borrowed;
    out[i].reclaim = std::max(0LL, members[i].used - out[i].planned);
  }
  // What may be written now: every lowering, then each rise as far as the room left
  // by the others' shares and their jobs allows.
  std::vector<long long> held(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i].limit = std::min(out[i].planned, members[i].limit_now);
    held[i] = std::max(out[i].limit, members[i].used);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (out[i].planned <= out[i].limit) continue;
    long long others = 0;
    for (std::size_t j = 0; j < n; ++j)
      if (j != i) others += held[j];
    const long long room = total - others;
    out[i].limit = std::max(out[i].limit, std::min(out[i].planned, room));
    held[i] = std::max(out[i].limit, members[i].used);
  }
  return out;
}

}  // namespace ojs::broker
