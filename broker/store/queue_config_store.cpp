#include "broker/store/queue_config_store.hpp"

#include <stdexcept>

#include "broker/store/job_store_internal.hpp"
#include "broker/store/keys.hpp"
#include "broker/store/reply_integer.hpp"
#include "ojs/core/time.hpp"

namespace ojs::broker {

bool Reconciliation::drift() const {
  if (ledger_gpus != actual_gpus || ledger_jobs != actual_jobs || ledger_gpu_mem_mb != actual_gpu_mem_mb ||
      ledger_tpu_chips != actual_tpu_chips)
    return true;
  for (const auto& t : tenants)
    if (t.ledger != t.actual) return true;
  return false;
}

StoredQueueConfig QueueConfigStore::load(const std::string& queue, const std::vector<std::string>& fields) {
  std::vector<std::string> cmd{"HMGET", keys::config(queue), "version", "updated_at"};
  cmd.insert(cmd.end(), fields.begin(), fields.end());
  const auto v = redis_.command(cmd);
  StoredQueueConfig c;
  if (v.elements.size() != cmd.size() - 2) return c;
  c.version = integer_of(v.elements[0]).value_or(0);
  c.updated_at_ms = integer_of(v.elements[1]);
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (!v.elements[i + 2].is_nil()) c.fields[fields[i]] = v.elements[i + 2].str;
  return c;
}

QueueConfigSaved QueueConfigStore::save(const std::string& queue, const QueueConfigWrite& c, std::optional<long long> expected_version) {
  std::vector<std::string> args{optional_text(expected_version), std::to_string(now_ms()), std::to_string(c.replaced.size())};
  args.insert(args.end(), c.replaced.begin(), c.replaced.end());
  args.push_back(std::to_string(c.fields.size()));
  append_fields(args, c.fields);
  for (const auto& [tenant, max] : c.tenant_max_gpus) {
    args.push_back(tenant);
    args.push_back(std::to_string(max));
  }
  auto reply = redis_.eval("queue_config", {keys::config(queue), keys::tenant_quotas(queue)}, args);
  if (reply.elements.size() < 2) throw std::runtime_error("malformed queue_config reply");
  const bool conflict = reply.elements[0].str == "conflict";
  // A queue in a cohort is listed as soon as it is configured, job or no job: the
  // cohort controller finds the members among the listed queues, and the overview,
  // metrics and status page show what an idle member lends.
  if (!conflict && !c.cohort.empty()) redis_.command(detail::queue_directory_entry(queue));
  return {conflict, reply.elements[1].integer};
}

BudgetWithTenants QueueConfigStore::budget(const std::string& queue) {
  auto cmds = budget_reads(queue);
  for (auto& c : tenant_quota_reads(queue)) cmds.push_back(std::move(c));
  const auto r = redis_.pipeline(cmds);
  auto quotas = tenant_quotas_from(r[2], r[3]);
  return {budget_from(r[0], r[1]), std::move(quotas.limits), std::move(quotas.used)};
}

Reconciliation QueueConfigStore::reconcile(const std::string& queue, bool repair) {
  auto r = redis_.eval("reconcile",
                       {keys::active(queue), keys::ledger(queue), keys::tenant_ledger(queue), keys::job_prefix(queue), keys::gangs(queue)},
                       {repair ? "1" : "0"});
  if (r.elements.size() < 10) throw std::runtime_error("malformed reconcile reply");
  Reconciliation out;
  out.ledger_gpus = r.elements[0].integer;
  out.ledger_jobs = r.elements[1].integer;
  out.actual_gpus = r.elements[2].integer;
  out.actual_jobs = r.elements[3].integer;
  const auto& rows = r.elements[4].elements;
  for (std::size_t i = 0; i + 2 < rows.size(); i += 3) out.tenants.push_back({rows[i].str, rows[i + 1].integer, rows[i + 2].integer});
  out.repaired = r.elements[5].integer == 1;
  out.ledger_gpu_mem_mb = r.elements[6].integer;
  out.actual_gpu_mem_mb = r.elements[7].integer;
  out.ledger_tpu_chips = r.elements[8].integer;
  out.actual_tpu_chips = r.elements[9].integer;
  return out;
}

}  // namespace ojs::broker
