// One leader among the replicas of a control plane: the one whose writes carry a Fence that
// holds (Store::CommitIf). etcd's election (store/etcd_election.h) is the implementation; the
// server sees only this, since the etcd client lives in a module of its own
// (store/etcd_module.h).
#ifndef TESSERA_STORE_ELECTION_H_
#define TESSERA_STORE_ELECTION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "store/store.h"

namespace tessera::store {

class Election {
 public:
  // Resigns, so another replica leads at once.
  virtual ~Election() = default;
  // The fence of this replica's leadership; nullopt while it does not lead.
  virtual std::optional<Fence> Leading() = 0;
  // Who leads (the leader's id), "" when nobody does; as last read.
  virtual std::string Leader() = 0;
  // How many times this replica became the leader or stopped being it.
  virtual int64_t transitions() = 0;
  // What this replica publishes about itself for `tessera store status`: `report`'s value,
  // taken at each renewal, gone with the replica.
  virtual void SetReport(std::function<std::string()> report) = 0;
};

}  // namespace tessera::store

#endif  // TESSERA_STORE_ELECTION_H_
