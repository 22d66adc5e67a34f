#include "broker/store/cohort_store.hpp"

#include "broker/store/keys.hpp"
#include "broker/store/reply_integer.hpp"

namespace ojs::broker {

std::vector<CohortSettings> CohortStore::read(const std::vector<std::string>& queues) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& q : queues) {
    cmds.push_back({"HMGET", keys::config(q), "cohort", "cohort_borrowing_limit", "cohort_lending_limit"});
    for (auto& c : budget_reads(q)) cmds.push_back(std::move(c));
  }
  const auto replies = redis_.pipeline(cmds);
  std::vector<CohortSettings> out;
  for (std::size_t i = 0; i < queues.size(); ++i) {
    const auto& fields = replies.at(3 * i);
    CohortSettings s;
    s.queue = queues[i];
    if (!fields.elements.at(0).is_nil()) s.cohort = fields.elements.at(0).str;
    s.borrowing_limit = integer_of(fields.elements.at(1));
    s.lending_limit = integer_of(fields.elements.at(2));
    s.budget = budget_from(replies.at(3 * i + 1), replies.at(3 * i + 2));
    out.push_back(std::move(s));
  }
  return out;
}

long long CohortStore::next_epoch() { return redis_.command({"INCR", keys::cohort_epoch()}).integer; }

bool CohortStore::set_share(const std::string& queue, long long epoch, std::optional<long long> share) {
  const auto reply = redis_.eval("cohort_share", {keys::config(queue)}, {std::to_string(epoch), share ? std::to_string(*share) : ""});
  return reply.integer == 1;
}

}  // namespace ojs::broker
