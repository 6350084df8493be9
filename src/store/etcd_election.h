// One leader among the replicas of a control plane on etcd, as etcd's own election (and
// Kubernetes' leader election) elects one: a lease of `ttl_seconds` kept alive every third of
// it, and a key <prefix>_election/<name> created under that lease only when absent. The replica
// whose key it is leads until its lease ends: it stops keeping it alive (it was stopped, lost
// etcd, or resigned), and etcd deletes the key with it.
//
// Leading() gives the Fence the leader's writes carry (Store::CommitIf): the key as created when
// it was elected. A deposed leader that wakes up after another was elected writes nothing: its
// key is gone or another's. It also stops counting itself the leader once a renewal has not
// succeeded within the TTL less a second (Kubernetes' renew deadline), before etcd's lease ends.
#ifndef TESSERA_STORE_ETCD_ELECTION_H_
#define TESSERA_STORE_ETCD_ELECTION_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "store/election.h"
#include "store/etcd_client.h"
#include "store/store.h"

namespace tessera::store {

class EtcdElection : public Election {
 public:
  // Campaigns as `id` (a name for this replica) for `name` ("scheduler").
  EtcdElection(EtcdOptions etcd, std::string name, std::string id, int ttl_seconds = 10);
  // Resigns: revokes the lease, so another replica leads at once.
  ~EtcdElection() override;
  EtcdElection(const EtcdElection&) = delete;
  EtcdElection& operator=(const EtcdElection&) = delete;

  std::optional<Fence> Leading() override;
  std::string Leader() override;
  int64_t transitions() override;
  const std::string& key() const { return key_; }
  // What this replica publishes about itself at each renewal, under <prefix>_replicas/<id> with
  // its lease (so the record goes when the replica does): `report`'s value, for `tessera store
  // status`.
  void SetReport(std::function<std::string()> report) override;

 private:
  void Run();
  // One step of the campaign: a lease, the key, or a renewal. Returns how long to wait.
  std::chrono::milliseconds Step();
  void Lose();

  EtcdClient client_;
  const std::string key_, id_, report_key_;
  std::function<std::string()> report_;  // guarded by mu_
  const int ttl_seconds_;

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  int64_t lease_ = 0;    // granted and not known to be over
  int64_t created_ = 0;  // the key's create_revision while leading, else 0
  std::string leader_;   // as last read
  int64_t transitions_ = 0;
  std::chrono::steady_clock::time_point renewed_;  // the last successful renewal
  std::thread runner_;
};

}  // namespace tessera::store

#endif  // TESSERA_STORE_ETCD_ELECTION_H_
