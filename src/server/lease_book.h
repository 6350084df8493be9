// Node lease renewals held in memory, as Nomad's servers hold their clients' heartbeats: a
// renewal that changes nothing of the stored Lease but its renewTime is recorded here, not
// written to the store, and the store gets the renewal at most every `persist_ms`. A thousand
// agents renewing every 5 s then cost the server no store commit, no change to publish and no
// object to parse again. Readers of liveness (the scheduling loop, /metrics, the Node and
// Lease views) ask the book for a lease's last renewal. Thread-safe.
//
// After a restart the book knows no renewal: a lease's stored renewTime may then be up to
// `persist_ms` older than its last accepted renewal, so until the node renews again its last
// renewal is taken as min(stored + persist_ms, the server's start), never
// earlier than what the agent may have been told. A node is therefore never declared dead
// early by a restart (nothing runs twice); one that died just before it is found up to
// `persist_ms` later.
#ifndef TESSERA_SERVER_LEASE_BOOK_H_
#define TESSERA_SERVER_LEASE_BOOK_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tessera::server {

class LeaseBook {
 public:
  explicit LeaseBook(int64_t persist_ms = 60'000) : persist_ms_(persist_ms) {}

  // When the server started (ms since the epoch): no renewal held before it is known.
  void set_started(int64_t now_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    started_ms_ = now_ms;
  }

  // The stored Lease `name` is now `body` (as stored) at `version`; null: deleted. Called for
  // every committed write of a Lease.
  void Stored(const std::string& name, const std::string* body, int64_t version);

  // A renewal at `now_ms`, `lease` as the write would store it (stamped, authorized): when the
  // stored Lease differs from it only in spec.renewTime and the store's own fields, the same
  // version is named if any, and the store was given a renewal less than `persist_ms` ago,
  // records it and returns the Lease as served. nullopt: write it to the store.
  std::optional<nlohmann::json> Renew(const nlohmann::json& lease, int64_t now_ms);

  // When the agent of `node` (a stored Node) last reported, as liveness is judged: the later
  // of the Node's status.heartbeat and its Lease's last renewal (`lease`: the stored Lease,
  // null when none), after a restart as the header says. ms since the epoch, -1 when unknown.
  int64_t LastBeat(const nlohmann::json& node, const nlohmann::json* lease);

  // `lease` (a stored Lease, served) with spec.renewTime its last renewal held here, if later.
  void Overlay(nlohmann::json* lease);

 private:
  struct Entry {
    nlohmann::json comparable;  // as stored, without what a renewal or the store changes
    nlohmann::json system;      // the store's own metadata (creationTimestamp, uid)
    int64_t version = 0;
    int64_t stored_ms = -1;   // its renewTime
    int64_t renewed_ms = -1;  // the last renewal held here, -1 when none since the start
  };

  const int64_t persist_ms_;
  std::mutex mu_;
  std::map<std::string, Entry, std::less<>> leases_;
  int64_t started_ms_ = 0;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_LEASE_BOOK_H_
