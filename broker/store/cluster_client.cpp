#include "broker/store/cluster_client.hpp"
#include "ojs/core/fibers.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace ojs::broker::cluster {

namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

// Sent to every master (FUNCTION LOAD: the library must be known wherever keys may live).
bool is_broadcast(const std::string& name) { return name == "FUNCTION"; }

}  // namespace

std::vector<std::string> command_keys(const std::vector<std::string>& argv) {
  if (argv.empty()) return {};
  const auto name = upper(argv[0]);
  if (name == "FCALL" || name == "FCALL_RO") {
    std::size_t n = 0;
    try { n = argv.size() > 2 ? std::stoul(argv[2]) : 0; } catch (...) { n = 0; }
    if (3 + n > argv.size()) n = argv.size() - 3;
    return {argv.begin() + 3, argv.begin() + 3 + static_cast<std::ptrdiff_t>(n)};
  }
  if (name == "DEL" || name == "EXISTS" || name == "MGET" || name == "UNLINK" || name == "TOUCH" || name == "WATCH")
    return {argv.begin() + 1, argv.end()};
  static const char* const keyless[] = {"PING", "INFO", "FUNCTION", "CLUSTER", "ECHO", "TIME", "DBSIZE", "CONFIG",
                                        "CLIENT", "WAIT", "ASKING", "AUTH", "SELECT", "FLUSHALL", "FLUSHDB", "KEYS", "SCAN"};
  for (const char* k : keyless)
    if (name == k) return {};
  if (argv.size() < 2) return {};
  return {argv[1]};
}

int command_slot(const std::vector<std::string>& argv) {
  const auto keys = command_keys(argv);
  if (keys.empty()) return -1;
  try {
    return common_slot(keys);
  } catch (const std::invalid_argument& e) {
    // Loud: a script or command that spans slots cannot run on a cluster.
    spdlog::error("cross-slot Redis call {}: {}", upper(argv[0]) == "FCALL" ? "FCALL " + argv[1] : argv[0], e.what());
    throw std::logic_error(std::string("cross-slot Redis call refused: ") + e.what());
  }
}

ReplyAction classify(const RedisValue& reply) {
  if (!reply.is_error()) return ReplyAction::done;
  const auto& e = reply.str;
  if (starts_with(e, "MOVED ")) return ReplyAction::moved;
  if (starts_with(e, "ASK ")) return ReplyAction::ask;
  if (starts_with(e, "TRYAGAIN") || starts_with(e, "CLUSTERDOWN") || starts_with(e, "LOADING") ||
      starts_with(e, "READONLY") || starts_with(e, "MASTERDOWN"))
    return ReplyAction::retry;
  return ReplyAction::done;
}

ClusterRouter::ClusterRouter(Options options) : options_(std::move(options)) {
  if (options_.seeds.empty()) throw std::invalid_argument("a Redis Cluster needs at least one seed node");
  try {
    refresh(0);
  } catch (const StoreUnavailable& e) {
    // Like a single Redis that is down at start: requests get 503 until it answers.
    spdlog::warn("Redis Cluster not reachable yet ({}); the slot map is read on first use", e.what());
  }
}

ClusterRouter::~ClusterRouter() = default;

std::string ClusterRouter::describe() const {
  std::string out = "redis-cluster";
  char separator = ' ';
  for (const auto& s : options_.seeds) {
    out += separator + s.describe();
    separator = ',';
  }
  return out;
}

RedisPool& ClusterRouter::pool_for(const NodeAddress& node) {
  std::lock_guard lock(mutex_);
  auto& pool = pools_[node.describe()];
  if (!pool) {
    RedisEndpoint ep;
    ep.host = node.host;
    ep.port = node.port;
    ep.password = options_.password;
    pool = std::make_unique<RedisPool>(ep, options_.pool_size);
    pool->check_idle_connections();
  }
  return *pool;
}

std::vector<NodeAddress> ClusterRouter::known_nodes() {
  std::lock_guard lock(mutex_);
  std::vector<NodeAddress> out = map_.masters();
  for (const auto& s : options_.seeds)
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  return out;
}

// Reads CLUSTER SLOTS from the first node that answers; skipped when another
// caller refreshed since `seen_generation` (a failover makes every thread ask).
void ClusterRouter::refresh(std::uint64_t seen_generation) {
  std::lock_guard serial(refresh_mutex_);
  {
    std::lock_guard lock(mutex_);
    if (generation_ != seen_generation) return;
  }
  std::string last_error = "no node known";
  for (const auto& node : known_nodes()) {
    try {
      auto reply = pool_for(node).send({{"CLUSTER", "SLOTS"}}).front();
      if (reply.is_error()) {
        last_error = node.describe() + ": " + reply.str;
        continue;
      }
      auto map = SlotMap::from_cluster_slots(reply);
      std::lock_guard lock(mutex_);
      map_ = std::move(map);
      ++generation_;
      return;
    } catch (const StoreUnavailable& e) {
      last_error = e.what();
    } catch (const std::invalid_argument& e) {
      last_error = node.describe() + ": " + e.what();
    }
  }
  {
    std::lock_guard lock(mutex_);
    ++generation_;  // callers waiting on this refresh retry with the map they have
  }
  throw StoreUnreachable("Redis Cluster: cannot read the slot map (" + last_error + ")");
}

RedisValue ClusterRouter::broadcast(const Commands& commands) {
  std::vector<NodeAddress> masters;
  std::uint64_t generation;
  {
    std::lock_guard lock(mutex_);
    masters = map_.masters();
    generation = generation_;
  }
  if (masters.empty()) {
    refresh(generation);
    std::lock_guard lock(mutex_);
    masters = map_.masters();
  }
  std::optional<RedisValue> first;
  std::string last_error;
  for (const auto& m : masters) {
    try {
      auto reply = pool_for(m).send(commands).front();
      if (!first) first = std::move(reply);
    } catch (const StoreUnavailable& e) {
      last_error = e.what();  // a master that is down serves no keys now; it gets the library on its first "Function not found"
    }
  }
  if (!first) throw StoreUnavailable("Redis Cluster: no master answered " + commands[0][0] + " (" + last_error + ")");
  return std::move(*first);
}

ClusterRouter::Round ClusterRouter::group_by_master(const std::vector<std::size_t>& pending, const std::vector<int>& slots,
                                                    const std::vector<std::optional<NodeAddress>>& asked) {
  Round round;
  std::lock_guard lock(mutex_);
  round.generation = generation_;
  for (const auto i : pending) {
    const NodeAddress* node = nullptr;
    if (asked[i]) node = &*asked[i];
    else if (slots[i] < 0) node = map_.masters().empty() ? nullptr : &map_.masters().front();
    else node = map_.master_of(slots[i]);
    if (!node) {
      round.unmapped.push_back(i);
      continue;
    }
    auto& g = round.groups[node->describe()];
    g.first = *node;
    g.second.push_back(i);
  }
  return round;
}

void ClusterRouter::send_to_master(const NodeAddress& node, const std::vector<std::size_t>& indexes, const Commands& commands,
                                   std::vector<std::optional<NodeAddress>>& asked, std::vector<RedisValue>& out, Retry& retry) {
  Commands batch;
  std::vector<std::size_t> reply_of;  // batch position of each command's reply
  bool writes = false;
  for (const auto i : indexes) {
    if (asked[i]) batch.push_back({"ASKING"});
    reply_of.push_back(batch.size());
    batch.push_back(commands[i]);
    writes = writes || (options_.replica_wait.enabled() && may_write(commands[i]));  // read only when WAIT is on
  }
  // The master's replicas confirm what this connection wrote, or the
  // round trip is not answered as done (a failover could undo it).
  const bool wait = writes && options_.replica_wait.enabled();
  if (wait) batch.push_back(options_.replica_wait.command());
  RedisPool& pool = pool_for(node);
  std::vector<RedisValue> replies;
  try {
    replies = pool.send(batch);
  } catch (const StoreUnreachable& e) {
    // Nothing was sent: the master is down or failing over. Retry with a fresh map.
    retry.last_error = e.what();
    retry.stale = retry.back_off = true;
    retry.again.insert(retry.again.end(), indexes.begin(), indexes.end());
    return;
  } catch (const StoreUnavailable&) {
    // Lost in flight: the command may have run, so it is the caller's to retry.
    pool.drop_idle();
    throw;
  }
  if (wait) {
    const auto& confirmed = replies.back();
    // Only what ran here counts: a command redirected (MOVED, ASK) wrote nothing on
    // this master and is sent again, with a WAIT of its own.
    bool wrote = false;
    for (std::size_t k = 0; k < indexes.size(); ++k)
      wrote = wrote || (classify(replies[reply_of[k]]) == ReplyAction::done && may_write(commands[indexes[k]]));
    if (wrote) require_replicas(options_.replica_wait, confirmed.is_error() ? 0 : confirmed.integer, node.describe());
  }
  for (std::size_t k = 0; k < indexes.size(); ++k) {
    const auto i = indexes[k];
    auto& reply = replies[reply_of[k]];
    asked[i].reset();
    switch (classify(reply)) {
      case ReplyAction::done: out[i] = std::move(reply); break;
      case ReplyAction::moved: {
        if (const auto r = parse_redirect(reply.str)) {
          std::lock_guard lock(mutex_);
          map_.assign(r->slot, r->node);
        }
        retry.stale = true;  // one MOVED usually means a whole range moved: read the map again
        retry.last_error = reply.str;
        retry.again.push_back(i);
        break;
      }
      case ReplyAction::ask:
        if (const auto r = parse_redirect(reply.str)) asked[i] = r->node;
        retry.last_error = reply.str;
        retry.again.push_back(i);
        break;
      case ReplyAction::retry:
        retry.last_error = node.describe() + ": " + reply.str;
        retry.stale = retry.back_off = true;
        retry.again.push_back(i);
        break;
    }
  }
}

// Each round sends every pending command to the master that serves it now, then
// follows the redirects and retries until all are done or the failover bound passes.
std::vector<RedisValue> ClusterRouter::pipeline(const Commands& commands) {
  std::vector<RedisValue> out(commands.size());
  if (commands.size() == 1 && is_broadcast(upper(commands[0][0]))) {
    out[0] = broadcast(commands);
    return out;
  }
  std::vector<int> slots(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) slots[i] = command_slot(commands[i]);
  std::vector<std::size_t> pending(commands.size());
  for (std::size_t i = 0; i < pending.size(); ++i) pending[i] = i;
  std::vector<std::optional<NodeAddress>> asked(commands.size());  // ASK targets, one use each
  const auto deadline = std::chrono::steady_clock::now() + options_.failover_bound;
  std::string last_error;
  for (int round_no = 0;; ++round_no) {
    const Round round = group_by_master(pending, slots, asked);
    Retry retry;
    if (!round.unmapped.empty()) {  // sent again once the map is read again
      retry.again = round.unmapped;
      retry.stale = retry.back_off = true;
      retry.last_error = "no master known for a slot";
    }
    for (const auto& [name, group] : round.groups) send_to_master(group.first, group.second, commands, asked, out, retry);
    if (!retry.last_error.empty()) last_error = retry.last_error;
    if (retry.again.empty()) return out;
    if (std::chrono::steady_clock::now() >= deadline)
      throw StoreUnavailable("Redis Cluster: no answer within " + std::to_string(options_.failover_bound.count()) +
                             " ms (" + last_error + ")");
    if (retry.back_off) fibers::sleep_for(std::chrono::milliseconds(std::min(50 << std::min(round_no, 3), 400)));
    if (retry.stale) {
      try {
        refresh(round.generation);
      } catch (const StoreUnavailable& e) {
        last_error = e.what();
      }
    }
    std::sort(retry.again.begin(), retry.again.end());  // keep the callers' order within each node
    pending = std::move(retry.again);
  }
}

}  // namespace ojs::broker::cluster
