// Webhooks (ojs-webhooks.md): subscriptions over the API, and deliveries a real
// HTTP receiver on loopback gets, signed, retried after a 500; the SSRF guard at
// creation and at delivery; tenant isolation; the field rules.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>

#include "ojs/core/digest.hpp"
#include "support/ml_fixtures.hpp"
#include "support/processes.hpp"
#include "support/role_tokens.hpp"

using nlohmann::json;
using namespace ojs::test;

namespace {

// A webhook endpoint: one request per connection, answered with the next status of
// `answers` (200 once they run out), every request kept.
class Receiver {
 public:
  struct Request {
    std::map<std::string, std::string> headers;  // lower-cased names
    std::string body;
  };

  Receiver() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(fd_, 16);
    thread_ = std::thread([this] { serve(); });
  }
  ~Receiver() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  void answer(std::vector<int> statuses) {
    std::lock_guard lock(mutex_);
    answers_.assign(statuses.begin(), statuses.end());
  }
  std::vector<Request> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) continue;
      handle(client);
      ::close(client);
    }
  }
  void handle(int client) {
    std::string data;
    char buf[4096];
    std::size_t header_end = std::string::npos, length = 0;
    for (;;) {
      pollfd p{client, POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) return;
      const auto n = ::recv(client, buf, sizeof buf, 0);
      if (n <= 0) return;
      data.append(buf, static_cast<std::size_t>(n));
      if (header_end == std::string::npos && (header_end = data.find("\r\n\r\n")) != std::string::npos) {
        Request r;
        std::size_t at = data.find("\r\n") + 2;
        while (at < header_end) {
          const auto eol = data.find("\r\n", at);
          const auto line = data.substr(at, eol - at);
          const auto colon = line.find(':');
          std::string name = line.substr(0, colon);
          for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
          at = eol + 2;
        }
        length = std::stoul(r.headers.count("content-length") ? r.headers["content-length"] : "0");
        pending_ = std::move(r);
      }
      if (header_end != std::string::npos && data.size() >= header_end + 4 + length) break;
    }
    pending_.body = data.substr(header_end + 4, length);
    int status = 200;
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(pending_);
      if (!answers_.empty()) {
        status = answers_.front();
        answers_.pop_front();
      }
    }
    const std::string reply = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
    ::send(client, reply.data(), reply.size(), MSG_NOSIGNAL);
  }

  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::deque<int> answers_;
  std::vector<Request> requests_;
  Request pending_;
};

// Pushes a job on `queue` as `producer`, and the admin runs it to completion.
std::string complete_job(Api& producer, Api& admin, const std::string& queue) {
  const auto id = producer.push(job_in(queue));
  const auto jobs = admin.fetch({queue}, "hook-worker");
  EXPECT_EQ(jobs.size(), 1u);
  EXPECT_EQ(admin.post("/ojs/v1/workers/ack", {{"job_id", id}, {"worker_id", "hook-worker"}, {"result", {{"ok", true}}}}).status, 200);
  return id;
}

json subscription(const std::string& url, json events, const std::string& secret = "receiver-secret-0001") {
  return {{"url", url}, {"events", std::move(events)}, {"secret", secret}};
}

// The event reader starts within a poll of the first active subscription, from
// then on (http-api.md, Webhooks): events made before it are not delivered.
void let_the_reader_start() { sleep_ms(500); }

}  // namespace

// A broker allowed to deliver to loopback (the receiver), retrying fast, with the
// shared token file: two tenant-pinned producers and an admin. The only broker on
// its Redis: another would claim deliveries under its own rules.
class Webhooks : public ::testing::Test {
 protected:
  std::string dir = make_temp_dir("webhooks");
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--auth-file", write_role_tokens(dir), "--webhooks-allow-private", "--webhooks-retry-base-ms",
                                     "200", "--webhooks-max-attempts", "3"}};
  Api admin_h{broker.url(), "admin-token"};
  Api team_a_h{broker.url(), "team-a-token"};
  Api team_b_h{broker.url(), "team-b-token"};
  Receiver receiver;
  std::string hook_url() const { return "http://127.0.0.1:" + std::to_string(receiver.port()) + "/hook"; }
};

TEST_F(Webhooks, DeliversSignedEventsAndRetriesAfterA500) {
  receiver.answer({500});  // the first attempt fails, the retry is answered 200
  const auto created = admin_h.post("/ojs/v1/webhooks/subscriptions", subscription(hook_url(), {"job.completed"}));
  ASSERT_EQ(created.status, 201) << created.body.dump();
  const auto sub_id = created.body["subscription"]["id"].get<std::string>();
  EXPECT_EQ(created.body["subscription"]["secret"], "receiver-secret-0001");
  let_the_reader_start();

  const auto job_id = complete_job(admin_h, admin_h, "hooks-q");
  ASSERT_TRUE(wait_until([&] { return receiver.requests().size() >= 2; }, 20)) << receiver.requests().size() << " requests";
  sleep_ms(1000);  // nothing more comes: job.enqueued and job.started are not subscribed
  const auto got = receiver.requests();
  ASSERT_EQ(got.size(), 2u);
  for (const auto& r : got) {
    // ojs-webhooks.md §8.1: sha256=HMAC-SHA256(secret, timestamp "." body).
    const auto& ts = r.headers.at("x-ojs-timestamp");
    EXPECT_EQ(r.headers.at("x-ojs-signature"), "sha256=" + ojs::hmac_sha256_hex("receiver-secret-0001", ts + "." + r.body));
    EXPECT_EQ(r.headers.at("x-ojs-event-type"), "job.completed");
    EXPECT_EQ(r.headers.at("x-ojs-subscription-id"), sub_id);
    EXPECT_EQ(r.headers.at("content-type"), "application/json");
    const auto event = json::parse(r.body);
    EXPECT_EQ(event["type"], "job.completed");
    EXPECT_EQ(event["subject"], job_id);
    EXPECT_EQ(event["data"]["queue"], "hooks-q");
  }
  // The retry is the same delivery (§7.5).
  EXPECT_EQ(got[0].headers.at("x-ojs-delivery-id"), got[1].headers.at("x-ojs-delivery-id"));

  // The delivery log: the failed attempt, then the delivered one, newest first.
  json log;
  ASSERT_TRUE(wait_until([&] {
    log = admin_h.get("/ojs/v1/webhooks/deliveries?subscription_id=" + sub_id).body["deliveries"];
    return log.size() >= 2;
  }, 10)) << log.dump();
  EXPECT_EQ(log[0]["status"], "delivered");
  EXPECT_EQ(log[0]["attempt"], 2);
  EXPECT_EQ(log[1]["status"], "failed");
  EXPECT_EQ(log[1]["status_code"], 500);
}

TEST_F(Webhooks, ATenantSeesAndReceivesOnlyItsOwn) {
  const auto a = team_a_h.post("/ojs/v1/webhooks/subscriptions", subscription(hook_url(), {"job.*"}));
  ASSERT_EQ(a.status, 201) << a.body.dump();
  const auto id = a.body["subscription"]["id"].get<std::string>();
  const auto path = "/ojs/v1/webhooks/subscriptions/" + id;
  let_the_reader_start();

  // team-b neither sees, changes nor deletes it.
  EXPECT_EQ(team_b_h.get(path).status, 404);
  EXPECT_EQ(team_b_h.call("PATCH", path, {{"active", false}}).status, 404);
  EXPECT_EQ(team_b_h.call("DELETE", path).status, 404);
  EXPECT_TRUE(team_b_h.get("/ojs/v1/webhooks/subscriptions").body["subscriptions"].empty());
  EXPECT_EQ(team_b_h.get("/ojs/v1/webhooks/deliveries?subscription_id=" + id).status, 404);
  // team-a and the admin do; the secret is never shown again (§6.3).
  const auto mine = team_a_h.get(path);
  ASSERT_EQ(mine.status, 200);
  EXPECT_EQ(mine.body["subscription"]["tenant"], "team-a");
  EXPECT_FALSE(mine.body["subscription"].contains("secret"));
  EXPECT_EQ(admin_h.get("/ojs/v1/webhooks/subscriptions").body["subscriptions"].size(), 1u);

  // Only team-a's job events are delivered to it.
  complete_job(team_b_h, admin_h, "hooks-b");
  const auto job_a = complete_job(team_a_h, admin_h, "hooks-a");
  ASSERT_TRUE(wait_until([&] {
    for (const auto& r : receiver.requests())
      if (json::parse(r.body)["type"] == "job.completed") return true;
    return false;
  }, 20));
  sleep_ms(500);
  for (const auto& r : receiver.requests()) {
    const auto event = json::parse(r.body);
    EXPECT_EQ(event["subject"], job_a) << r.body;
    EXPECT_EQ(event["data"]["tenant"], "team-a") << r.body;
  }
  EXPECT_EQ(team_a_h.call("DELETE", path).status, 200);
  EXPECT_EQ(admin_h.get(path).status, 404);
}

TEST_F(Webhooks, FieldsBreakingARuleAreNamed) {
  const auto field_of = [&](const json& body) {
    const auto r = admin_h.post("/ojs/v1/webhooks/subscriptions", body);
    EXPECT_EQ(r.status, 400) << body.dump() << " -> " << r.body.dump();
    return r.body["error"]["details"].value("field", "");
  };
  EXPECT_EQ(field_of({{"events", {"job.completed"}}}), "url");
  EXPECT_EQ(field_of({{"url", hook_url()}}), "events");
  EXPECT_EQ(field_of(subscription("ftp://example.com/x", {"job.completed"})), "url");
  EXPECT_EQ(field_of(subscription("http://user:pw@example.com/x", {"job.completed"})), "url");
  EXPECT_EQ(field_of(subscription(hook_url(), json::array())), "events");
  EXPECT_EQ(field_of(subscription(hook_url(), {"Job Completed"})), "events[0]");
  EXPECT_EQ(field_of(subscription(hook_url(), {"job.completed", 7})), "events[1]");
  EXPECT_EQ(field_of(subscription(hook_url(), {"job.*"}, "short")), "secret");
  auto with_filter = subscription(hook_url(), {"job.*"});
  with_filter["filter"] = {{"queue", {"a"}}};
  EXPECT_EQ(field_of(with_filter), "filter.queue");
  auto unknown = subscription(hook_url(), {"job.*"});
  unknown["callback"] = "x";
  EXPECT_EQ(field_of(unknown), "callback");

  const auto created = admin_h.post("/ojs/v1/webhooks/subscriptions", subscription(hook_url(), {"job.*"}));
  ASSERT_EQ(created.status, 201);
  const auto path = "/ojs/v1/webhooks/subscriptions/" + created.body["subscription"]["id"].get<std::string>();
  const auto patch = [&](const json& body) { return admin_h.call("PATCH", path, body); };
  EXPECT_EQ(patch({{"secret", "another-secret-0001"}}).body["error"]["details"]["field"], "secret");
  EXPECT_EQ(patch({{"active", "no"}}).body["error"]["details"]["field"], "active");
  const auto updated = patch({{"events", {"job.completed", "job.failed", "job.cancelled"}}, {"active", false}});
  ASSERT_EQ(updated.status, 200) << updated.body.dump();
  EXPECT_EQ(updated.body["subscription"]["events"].size(), 3u);
  EXPECT_EQ(updated.body["subscription"]["active"], false);
  // A rotation answers the new secret once.
  const auto rotated = admin_h.post(path + "/rotate-secret", json::object());
  ASSERT_EQ(rotated.status, 200);
  EXPECT_EQ(rotated.body["subscription"]["secret"].get<std::string>().rfind("whsec_", 0), 0u);
}

// Without --webhooks-allow-private: addresses on the host's own networks are refused
// when the subscription is made, and a name resolving to one is refused at delivery.
TEST(WebhooksGuard, PrivateTargetsAreRefused) {
  RedisServer redis;
  BrokerProcess broker{redis.url(), {"--webhooks-retry-base-ms", "100"}};
  Api api{broker.url()};
  Receiver receiver;
  const auto port = std::to_string(receiver.port());
  for (const std::string& url : std::vector<std::string>{"http://127.0.0.1:" + port + "/", "http://localhost:" + port + "/", "http://10.1.2.3/",
                                "http://192.168.0.1/", "http://172.16.0.1/", "http://100.64.0.1/", "http://169.254.169.254/latest",
                                "http://[::1]:" + port + "/", "http://[fd00::1]/", "http://[fe80::1]/", "http://[::ffff:127.0.0.1]/",
                                "http://0.0.0.0/", "http://2130706433/", "http://127.1/"}) {
    const auto r = api.post("/ojs/v1/webhooks/subscriptions", subscription(url, {"*"}));
    EXPECT_EQ(r.status, 422) << url << " -> " << r.body.dump();
    EXPECT_EQ(r.body["error"]["details"]["field"], "url") << url;
  }
  EXPECT_EQ(api.post("/ojs/v1/webhooks/subscriptions", subscription("https://example.com/hook", {"workflow.completed"})).status, 201);

  // This host's own name resolves to loopback here (/etc/hosts): accepted as a name,
  // refused once resolved, and the receiver listening there gets nothing.
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  addrinfo* found = nullptr;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  if (::getaddrinfo(host, nullptr, &hints, &found) != 0) GTEST_SKIP() << host << " does not resolve";
  const auto v4 = ntohl(reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr.s_addr);
  ::freeaddrinfo(found);
  if ((v4 >> 24) != 127) GTEST_SKIP() << host << " does not resolve to loopback";
  const auto named = api.post("/ojs/v1/webhooks/subscriptions", subscription("http://" + std::string(host) + ":" + port + "/", {"job.*"}));
  ASSERT_EQ(named.status, 201) << named.body.dump();
  const auto id = named.body["subscription"]["id"].get<std::string>();
  let_the_reader_start();
  complete_job(api, api, "guarded");
  json log;
  ASSERT_TRUE(wait_until([&] {
    log = api.get("/ojs/v1/webhooks/deliveries?subscription_id=" + id).body["deliveries"];
    return !log.empty();
  }, 20));
  EXPECT_EQ(log[0]["status"], "dead") << log.dump();
  EXPECT_NE(log[0]["error"].get<std::string>().find("loopback"), std::string::npos) << log.dump();
  sleep_ms(500);
  EXPECT_TRUE(receiver.requests().empty());
}
