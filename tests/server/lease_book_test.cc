#include "server/lease_book.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/time.h"

namespace tessera::server {
namespace {

using nlohmann::json;

constexpr int64_t kT0 = 1'800'000'000'000;  // a time in 2027, ms

json Lease(const std::string& name, int64_t renewed_ms, const std::string& holder = "n1") {
  return {{"apiVersion", "tessera.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}, {"uid", "u-" + name}, {"creationTimestamp", "x"}}},
          {"spec", {{"holderIdentity", holder}, {"renewTime", api::FormatTime(renewed_ms)}}}};
}

json Node(const std::string& name, int64_t heartbeat_ms) {
  return {{"metadata", {{"name", name}}},
          {"status", {{"heartbeat", api::FormatTime(heartbeat_ms)}}}};
}

// A renewal that changes only renewTime is held in memory while the store had one less than
// persist_ms ago; anything else, or a stale version, goes to the store.
TEST(LeaseBookTest, RenewalsAreHeldUntilTheStoreIsDueOne) {
  LeaseBook book(60'000);
  EXPECT_FALSE(book.Renew(Lease("n1", kT0), kT0).has_value()) << "no stored lease yet";
  const std::string stored = Lease("n1", kT0).dump();
  book.Stored("n1", &stored, 7);

  json renewal = Lease("n1", kT0 + 5'000);
  renewal["metadata"].erase("uid");
  renewal["metadata"].erase("creationTimestamp");
  auto held = book.Renew(renewal, kT0 + 5'000);
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ((*held)["metadata"]["resourceVersion"], "7");
  EXPECT_EQ((*held)["metadata"]["uid"], "u-n1") << "the store's own fields are served";
  EXPECT_EQ((*held)["spec"]["renewTime"], api::FormatTime(kT0 + 5'000));

  // Another holder is a change: stored.
  EXPECT_FALSE(book.Renew(Lease("n1", kT0 + 6'000, "n2"), kT0 + 6'000).has_value());
  // A stale resourceVersion: stored (and refused there).
  json stale = renewal;
  stale["metadata"]["resourceVersion"] = "6";
  EXPECT_FALSE(book.Renew(stale, kT0 + 7'000).has_value());
  // The store's copy is persist_ms old: this one is written.
  EXPECT_FALSE(book.Renew(renewal, kT0 + 60'000).has_value());
}

// Liveness reads the later of the Node's heartbeat and the lease's last renewal, held or
// stored; a served Lease shows the held renewal.
TEST(LeaseBookTest, LastBeatAndTheServedLeaseSeeHeldRenewals) {
  LeaseBook book(60'000);
  book.set_started(kT0 - 1'000'000);
  const json stored_lease = Lease("n1", kT0);
  const std::string stored = stored_lease.dump();
  book.Stored("n1", &stored, 3);
  EXPECT_EQ(book.LastBeat(Node("n1", kT0 - 10'000), &stored_lease), kT0);
  ASSERT_TRUE(book.Renew(Lease("n1", kT0 + 20'000), kT0 + 20'000).has_value());
  EXPECT_EQ(book.LastBeat(Node("n1", kT0 - 10'000), &stored_lease), kT0 + 20'000);
  EXPECT_EQ(book.LastBeat(Node("n1", kT0 + 30'000), &stored_lease), kT0 + 30'000);
  json served = stored_lease;
  book.Overlay(&served);
  EXPECT_EQ(served["spec"]["renewTime"], api::FormatTime(kT0 + 20'000));
  // The store catches up: a later stored renewal stands.
  const json newer = Lease("n1", kT0 + 40'000);
  const std::string newer_text = newer.dump();
  book.Stored("n1", &newer_text, 4);
  EXPECT_EQ(book.LastBeat(Node("n1", 0), &newer), kT0 + 40'000);
  // Deleted: nothing held.
  book.Stored("n1", nullptr, 5);
  EXPECT_FALSE(book.Renew(Lease("n1", kT0 + 41'000), kT0 + 41'000).has_value());
}

// A renewal persisted clears the renewals held before it; a reader whose copy of the Lease is
// the version before (its snapshot not yet caught up) still sees the latest renewal, not the
// older stored one: at 1,000 nodes such reads declared nodes NotReady exactly persist_ms after
// their last stored renewal, and their running gangs were scheduled again.
TEST(LeaseBookTest, AReaderWithAnOlderCopyOfTheLeaseSeesTheLatestRenewal) {
  LeaseBook book(60'000);
  book.set_started(kT0 - 1'000'000);
  const json old_lease = Lease("n1", kT0);
  const std::string old_text = old_lease.dump();
  book.Stored("n1", &old_text, 3);
  ASSERT_TRUE(book.Renew(Lease("n1", kT0 + 55'000), kT0 + 55'000).has_value());
  // Due for the store at kT0 + 60 s: written, and the book told.
  ASSERT_FALSE(book.Renew(Lease("n1", kT0 + 60'000), kT0 + 60'000).has_value());
  const std::string new_text = Lease("n1", kT0 + 60'000).dump();
  book.Stored("n1", &new_text, 4);
  EXPECT_EQ(book.LastBeat(Node("n1", 0), &old_lease), kT0 + 60'000);
  // Renewals held after it count as before.
  ASSERT_TRUE(book.Renew(Lease("n1", kT0 + 65'000), kT0 + 65'000).has_value());
  EXPECT_EQ(book.LastBeat(Node("n1", 0), &old_lease), kT0 + 65'000);
}

// After a restart nothing is held: a lease stored at T may have been renewed unstored until
// T + persist_ms, so its node counts as alive until then (capped at the server's start), never
// dead early.
TEST(LeaseBookTest, AfterARestartAStoredRenewalCountsUpToPersistLater) {
  LeaseBook book(60'000);
  const json lease = Lease("n1", kT0);
  book.set_started(kT0 + 90'000);
  EXPECT_EQ(book.LastBeat(Node("n1", 0), &lease), kT0 + 60'000);
  LeaseBook early(60'000);
  early.set_started(kT0 + 10'000);
  EXPECT_EQ(early.LastBeat(Node("n1", 0), &lease), kT0 + 10'000);
  const json silent = {{"metadata", {{"name", "n1"}}}};
  EXPECT_EQ(early.LastBeat(silent, nullptr), -1) << "no lease, no heartbeat: unknown";
}

}  // namespace
}  // namespace tessera::server
