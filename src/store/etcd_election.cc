#include "store/etcd_election.h"

#include <utility>

namespace tessera::store {

using nlohmann::json;

namespace {

constexpr std::chrono::milliseconds kCampaignRetry{1000};

}  // namespace

EtcdElection::EtcdElection(EtcdOptions etcd, std::string name, std::string id, int ttl_seconds)
    : client_(etcd),
      key_(EtcdElectionKey(etcd, name)),
      id_(std::move(id)),
      report_key_(EtcdReplicasPrefix(etcd) + id_),
      ttl_seconds_(ttl_seconds) {
  runner_ = std::thread([this] { Run(); });
}

EtcdElection::~EtcdElection() {
  int64_t lease;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    lease = lease_;
  }
  wake_.notify_all();
  runner_.join();
  if (lease != 0) client_.Call("lease/revoke", {{"ID", std::to_string(lease)}});
}

std::optional<Fence> EtcdElection::Leading() {
  std::lock_guard<std::mutex> lock(mu_);
  const auto deadline = std::chrono::seconds(ttl_seconds_) - std::chrono::seconds(1);
  if (created_ == 0 || std::chrono::steady_clock::now() - renewed_ > deadline) {
    return std::nullopt;
  }
  return Fence{key_, created_};
}

std::string EtcdElection::Leader() {
  std::lock_guard<std::mutex> lock(mu_);
  return leader_;
}

int64_t EtcdElection::transitions() {
  std::lock_guard<std::mutex> lock(mu_);
  return transitions_;
}

void EtcdElection::Lose() {
  std::lock_guard<std::mutex> lock(mu_);
  if (created_ != 0) ++transitions_;
  created_ = 0;
  lease_ = 0;
  if (leader_ == id_) leader_.clear();
}

void EtcdElection::Run() {
  while (true) {
    const std::chrono::milliseconds wait = Step();
    std::unique_lock<std::mutex> lock(mu_);
    if (wake_.wait_for(lock, wait, [&] { return stopping_; })) return;
  }
}

void EtcdElection::SetReport(std::function<std::string()> report) {
  std::lock_guard<std::mutex> lock(mu_);
  report_ = std::move(report);
}

std::chrono::milliseconds EtcdElection::Step() {
  const auto renew_every = std::chrono::milliseconds(ttl_seconds_ * 1000 / 3);
  int64_t lease, created;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lease = lease_;
    created = created_;
  }
  if (lease == 0) {
    auto granted = client_.Call("lease/grant", {{"TTL", std::to_string(ttl_seconds_)}});
    if (!granted.ok()) return kCampaignRetry;
    std::lock_guard<std::mutex> lock(mu_);
    lease_ = EtcdInt(*granted, "ID");
    renewed_ = std::chrono::steady_clock::now();
    return std::chrono::milliseconds(0);
  }
  if (created == 0) {
    // The key, made under this replica's lease, only where there is none.
    json txn = {
        {"compare",
         {{{"key", Base64(key_)},
           {"target", "CREATE"},
           {"result", "EQUAL"},
           {"create_revision", "0"}}}},
        {"success",
         {{{"request_put",
            {{"key", Base64(key_)}, {"value", Base64(id_)}, {"lease", std::to_string(lease)}}}}}},
        {"failure", {{{"request_range", {{"key", Base64(key_)}}}}}}};
    auto r = client_.Call("kv/txn", txn);
    if (r.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (r->value("succeeded", false)) {
        created_ = EtcdInt((*r)["header"], "revision");
        leader_ = id_;
        ++transitions_;
      } else {
        const json& got = (*r)["responses"][0].value("response_range", json::object());
        if (got.contains("kvs") && !got["kvs"].empty()) {
          const json& kv = got["kvs"][0];
          auto holder = Unbase64(kv.value("value", ""));
          leader_ = holder.ok() ? *holder : "";
          if (EtcdInt(kv, "lease") == lease) {  // this replica's, from before a lost answer
            created_ = EtcdInt(kv, "create_revision");
            ++transitions_;
          }
        }
      }
    }
  }
  // Keep the lease alive: one request on etcd's keep-alive stream, its first answer.
  int64_t ttl = -1;
  Status s =
      client_.Stream("lease/keepalive", {{"ID", std::to_string(lease)}}, [&](const json& result) {
        ttl = EtcdInt(result, "TTL");
        return false;
      });
  if (s.ok() && ttl > 0) {
    std::function<std::string()> report;
    {
      std::lock_guard<std::mutex> lock(mu_);
      renewed_ = std::chrono::steady_clock::now();
      report = report_;
    }
    if (report) {
      // Best effort: a record missed now is written at the next renewal.
      (void)client_.Call("kv/put", {{"key", Base64(report_key_)},
                                    {"value", Base64(report())},
                                    {"lease", std::to_string(lease)}});
    }
  } else if (s.ok() && ttl == 0) {
    Lose();  // the lease ended: etcd deleted the key with it
    return std::chrono::milliseconds(0);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (created_ == 0) return kCampaignRetry;
  return renew_every;
}

}  // namespace tessera::store
