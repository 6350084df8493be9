// The control plane's state layer on its own: the data directory it owns, the store handed in,
// its commits (seen by the feed, lease renewals noted, a failing store refused whole), the
// admin token of a first start and the revocation of finished Jobs' exec tokens.
#include "server/control_plane.h"

#include <prometheus/text_serializer.h>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "api/time.h"
#include "server/accountant.h"
#include "store/memory_store.h"

namespace tessera::server {
namespace {

using nlohmann::json;

class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-plane-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // A MemoryStore handed in, kept reachable for faults.
  ControlPlane::StoreOpener Memory() {
    return [this](const std::string&) -> Result<std::unique_ptr<store::Store>> {
      auto s = std::make_unique<store::MemoryStore>();
      memory_ = s.get();
      return std::unique_ptr<store::Store>(std::move(s));
    };
  }
  std::string dir_;
  store::MemoryStore* memory_ = nullptr;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

TEST_F(ControlPlaneTest, OwnsItsDataDirectoryAndMakesTheAdminTokenOnce) {
  auto plane = ControlPlane::Open(dir_ + "/data");
  ASSERT_TRUE(plane.ok()) << plane.status().message();
  const std::string token = ReadFile(dir_ + "/data/admin.token");
  EXPECT_FALSE(token.empty());
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/data/admin.token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE((*plane)->tokens().Authenticate("Bearer " + token).ok());
  // One owner at a time.
  EXPECT_FALSE(ControlPlane::Open(dir_ + "/data").ok());
  plane->reset();
  // Opened again: the same state, and the token is not made anew.
  auto again = ControlPlane::Open(dir_ + "/data");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(ReadFile(dir_ + "/data/admin.token"), token);
  EXPECT_TRUE((*again)->tokens().Authenticate("Bearer " + token).ok());
}

TEST_F(ControlPlaneTest, CommitsThroughTheStoreHandedInAndTheFeedSeesThem) {
  auto plane = ControlPlane::Open(dir_, Memory());
  ASSERT_TRUE(plane.ok()) << plane.status().message();
  ControlPlane& p = **plane;
  ASSERT_NE(memory_, nullptr);
  EXPECT_EQ(&p.store(), memory_);
  const json lease = {{"apiVersion", "tessera.io/v1"},
                      {"kind", "Lease"},
                      {"metadata", {{"name", "n1"}}},
                      {"spec", {{"holderIdentity", "n1"}, {"renewTime", "2027-01-01T00:00:00Z"}}}};
  const store::Write w{store::Write::Op::kPut, {"Lease", "", "n1"}, lease.dump(), std::nullopt};
  auto r = p.Commit(std::span<const store::Write>(&w, 1));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(p.feed().head(), (*r)[0]);
  // The lease book knows the stored Lease: its renewal is the node's beat.
  const json node = {{"metadata", {{"name", "n1"}}}, {"status", json::object()}};
  auto stored = p.store().Get({"Lease", "", "n1"});
  ASSERT_TRUE(stored.ok() && stored->has_value());
  const json served = json::parse((*stored)->body);
  EXPECT_EQ(p.leases().LastBeat(node, &served), api::ParseTime("2027-01-01T00:00:00Z"));
  // A store that fails: the commit is refused and nothing is seen.
  memory_->FailCommits(1, Internal("disk gone"));
  const int64_t before = p.feed().head();
  EXPECT_FALSE(p.Commit(std::span<const store::Write>(&w, 1)).ok());
  EXPECT_EQ(p.feed().head(), before);
  EXPECT_EQ(p.store().Revision(), before);
  // Both commits timed, the failed one counted, in the metrics /metrics renders.
  prometheus::TextSerializer text;
  const std::string out = text.Serialize(p.metrics().registry().Collect());
  EXPECT_NE(out.find("tessera_store_commit_duration_seconds_count 2"), std::string::npos) << out;
  EXPECT_NE(out.find("tessera_store_commit_failures_total 1"), std::string::npos) << out;
}

TEST_F(ControlPlaneTest, RevokesTheExecTokensOfJobsNoLongerRunning) {
  auto plane = ControlPlane::Open(dir_, Memory());
  ASSERT_TRUE(plane.ok()) << plane.status().message();
  ControlPlane& p = **plane;
  auto keep = p.tokens().Create(Principal::Role::kExec, "a", "", "", "train/u-1");
  auto gone = p.tokens().Create(Principal::Role::kExec, "a", "", "", "old/u-2");
  ASSERT_TRUE(keep.ok() && gone.ok());
  auto revoked = p.RevokeExecTokens({"a/train/u-1"});
  ASSERT_TRUE(revoked.ok()) << revoked.status().message();
  EXPECT_EQ(*revoked, 1);
  EXPECT_TRUE(p.tokens().Authenticate("Bearer " + *keep).ok());
  EXPECT_FALSE(p.tokens().Authenticate("Bearer " + *gone).ok());
}

}  // namespace
}  // namespace tessera::server
