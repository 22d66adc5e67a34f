#include "broker/store/job_control_store.hpp"

#include "broker/store/keys.hpp"

namespace ojs::broker {

namespace {
std::vector<std::string> hold_keys(const std::string& queue, const std::string& id) {
  return {keys::job(queue, id), keys::ready_prefix(queue), keys::delayed(queue), keys::class_heads(queue),
          keys::on_hold(queue), keys::events(queue), keys::expiring(queue), keys::reservation_waits(queue)};
}
}  // namespace

Transition JobControlStore::hold(const std::string& queue, const std::string& id, const std::string& who) {
  return JobStore::lean_transition(redis_, "hold", hold_keys(queue, id), false, {who}, queue, id);
}

Transition JobControlStore::release(const std::string& queue, const std::string& id, const std::string& who) {
  return JobStore::lean_transition(redis_, "release", hold_keys(queue, id), false, {who}, queue, id);
}

Transition JobControlStore::update(const std::string& queue, const std::string& id, const JobUpdate& u) {
  std::vector<std::string> args{u.expected_doc, u.class_id, u.class_json, rank_text(u.rank_base), u.order_base,
                                std::to_string(u.gone.size())};
  args.insert(args.end(), u.gone.begin(), u.gone.end());
  append_fields(args, u.fields);
  return JobStore::lean_transition(redis_, "update_job",
                                   {keys::job(queue, id), keys::ready_prefix(queue), keys::class_heads(queue),
                                    keys::classes(queue), keys::classes_version(queue), keys::events(queue)},
                                   false, args, queue, id);
}

}  // namespace ojs::broker
