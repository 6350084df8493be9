#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "store/etcd_fixture.h"
#include "store/etcd_store.h"
#include "store/memory_store.h"
#include "store/store.h"

namespace tessera::store {
namespace {

namespace fs = std::filesystem;

// A fresh database path in a temporary directory removed at the end of the test.
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-store-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/state.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Store> Open(SqliteOptions o = {}) {
    auto s = OpenSqliteStore(path_, o);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::string dir_, path_;
};

// The Store contract, held by every implementation: "sqlite", "memory" and "etcd" (a member of
// Debian's etcd started for the test process, a key prefix per store). Revisions are relative
// to the store's when it opened (`base_`): etcd's count every write to the cluster, and give
// the writes of one commit one revision.
class StoreContract : public StoreTest, public ::testing::WithParamInterface<std::string> {
 protected:
  std::unique_ptr<Store> Open(SqliteOptions o = {}) {
    std::unique_ptr<Store> s;
    if (GetParam() == "memory") {
      s = std::make_unique<MemoryStore>(o.retained_changes);
    } else if (GetParam() == "etcd") {
      EXPECT_TRUE(SharedEtcd().ready()) << "etcd did not start";
      auto etcd = ParseEtcdUrl(TestEtcdUrl());
      EXPECT_TRUE(etcd.ok());
      auto opened = OpenEtcdStore({.etcd = *etcd, .retained_changes = size_t(o.retained_changes)});
      EXPECT_TRUE(opened.ok()) << opened.status().message();
      if (opened.ok()) s = std::move(opened).value();
    } else {
      s = StoreTest::Open(o);
    }
    base_ = s ? s->Revision() : 0;
    return s;
  }
  // Whether the writes of one commit share its revision (etcd), rather than take one each.
  bool OneRevisionPerCommit() const { return GetParam() == "etcd"; }
  int64_t base_ = 0;
};

INSTANTIATE_TEST_SUITE_P(Stores, StoreContract, ::testing::Values("sqlite", "memory", "etcd"),
                         [](const auto& info) { return info.param; });

ObjectKey Job(std::string name, std::string ns = "team-a") { return {"Job", ns, name}; }

Write Create(ObjectKey k, std::string body) { return {Write::Op::kCreate, k, body, {}}; }
Write Put(ObjectKey k, std::string body, std::optional<int64_t> v = {}) {
  return {Write::Op::kPut, k, body, v};
}

TEST_P(StoreContract, WritesGetsAndListsWithVersions) {
  auto s = Open();
  auto r = s->Commit(std::vector<Write>{Create(Job("a"), "{\"a\":1}"),
                                        Create(Job("b", "team-b"), "{\"b\":1}"),
                                        Create({"Queue", "", "q"}, "{}")});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int64_t b = base_;
  EXPECT_EQ(*r, OneRevisionPerCommit() ? (std::vector<int64_t>{b + 1, b + 1, b + 1})
                                       : (std::vector<int64_t>{b + 1, b + 2, b + 3}));
  EXPECT_EQ(s->Revision(), r->back());
  auto got = s->Get(Job("a"));
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->version, (*r)[0]);
  EXPECT_EQ((*got)->body, "{\"a\":1}");
  EXPECT_FALSE(s->Get(Job("a", "team-b"))->has_value());
  EXPECT_EQ(s->List("Job", std::nullopt)->size(), 2u);
  auto only_b = s->List("Job", std::string_view("team-b"));
  ASSERT_EQ(only_b->size(), 1u);
  EXPECT_EQ((*only_b)[0].key.name, "b");
}

TEST_P(StoreContract, ListsTheKindsItHolds) {
  auto s = Open();
  EXPECT_TRUE(s->ListKinds()->empty());
  ASSERT_TRUE(s->Commit(std::vector<Write>{Create({"Token", "", "t"}, "{}"), Create(Job("a"), "{}"),
                                           Create({"Queue", "", "q"}, "{}"),
                                           Create(Job("b", "team-b"), "{}")})
                  .ok());
  EXPECT_EQ(*s->ListKinds(), (std::vector<std::string>{"Job", "Queue", "Token"}));
  ASSERT_TRUE(s->Commit(std::vector<Write>{{Write::Op::kDelete, {"Queue", "", "q"}, "", {}}}).ok());
  EXPECT_EQ(*s->ListKinds(), (std::vector<std::string>{"Job", "Token"}));
}

TEST_P(StoreContract, StaleVersionsConflictAndCreateDoesNotOverwrite) {
  auto s = Open();
  auto first = s->Commit(std::vector<Write>{Create(Job("a"), "v1")});
  ASSERT_TRUE(first.ok());
  const int64_t v1 = (*first)[0];
  auto dup = s->Commit(std::vector<Write>{Create(Job("a"), "v2")});
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  auto stale = s->Commit(std::vector<Write>{Put(Job("a"), "v2", v1 + 7)});
  EXPECT_EQ(stale.status().code(), StatusCode::kConflict);
  EXPECT_NE(stale.status().message().find("is at version " + std::to_string(v1)), std::string::npos)
      << stale.status().message();
  auto fresh = s->Commit(std::vector<Write>{Put(Job("a"), "v2", v1)});
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ((*fresh)[0], v1 + 1);
  // expected_version 0: only when absent.
  EXPECT_EQ(s->Commit(std::vector<Write>{Put(Job("a"), "v3", 0)}).status().code(),
            StatusCode::kConflict);
  EXPECT_EQ((*s->Get(Job("a")))->body, "v2");
}

TEST_P(StoreContract, ACommitIsAllOrNothing) {
  // The third write fails (deletes a missing object): the first two, and the revision, stay as
  // they were.
  auto s = Open();
  ASSERT_TRUE(s->Commit(std::vector<Write>{Create(Job("keep"), "k")}).ok());
  const int64_t b = base_;
  auto r = s->Commit(std::vector<Write>{Create(Job("x"), "x"),
                                        Put(Job("keep"), "changed"),
                                        {Write::Op::kDelete, Job("missing"), "", {}}});
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(s->Get(Job("x"))->has_value());
  EXPECT_EQ((*s->Get(Job("keep")))->body, "k");
  EXPECT_EQ(s->Revision(), b + 1);
  EXPECT_EQ(s->ChangesAfter(b, 100)->size(), 1u);
  // The next write continues from there.
  EXPECT_EQ((*s->Commit(std::vector<Write>{Create(Job("y"), "y")}))[0], b + 2);
}

TEST_P(StoreContract, IdenticalPutIsANoOp) {
  auto s = Open();
  ASSERT_TRUE(s->Commit(std::vector<Write>{Put(Job("a"), "same")}).ok());
  auto again = s->Commit(std::vector<Write>{Put(Job("a"), "same")});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0], base_ + 1);
  EXPECT_EQ(s->Revision(), base_ + 1);
  EXPECT_EQ(s->ChangesAfter(base_, 100)->size(), 1u);
}

TEST_P(StoreContract, ChangesAreOrderedAndDeletesCarryTheLastBody) {
  auto s = Open();
  ASSERT_TRUE(s->Commit(std::vector<Write>{Create(Job("a"), "1")}).ok());
  ASSERT_TRUE(s->Commit(std::vector<Write>{Put(Job("a"), "2")}).ok());
  ASSERT_TRUE(s->Commit(std::vector<Write>{{Write::Op::kDelete, Job("a"), "", {}}}).ok());
  auto all = s->ChangesAfter(base_, 100);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].type, ChangeType::kAdded);
  EXPECT_EQ((*all)[1].type, ChangeType::kModified);
  EXPECT_EQ((*all)[2].type, ChangeType::kDeleted);
  EXPECT_EQ((*all)[2].object.body, "2");
  EXPECT_EQ((*all)[2].revision, base_ + 3);
  auto tail = s->ChangesAfter(base_ + 1, 1);
  ASSERT_EQ(tail->size(), 1u);
  EXPECT_EQ((*tail)[0].revision, base_ + 2);
}

TEST_F(StoreTest, ReopenRestoresObjectsAndRevision) {
  {
    auto s = Open();
    ASSERT_TRUE(s->Commit(std::vector<Write>{Create(Job("a"), "1"), Create(Job("b"), "2")}).ok());
  }
  auto s = Open();
  EXPECT_EQ(s->Revision(), 2);
  EXPECT_EQ(s->List("Job", std::nullopt)->size(), 2u);
  EXPECT_EQ((*s->Commit(std::vector<Write>{Create(Job("c"), "3")}))[0], 3);
}

TEST_P(StoreContract, OldChangesAreCompacted) {
  // Keep 10 changes: after 1,020 writes, changes up to 1,010 may be gone (compaction runs in
  // batches of 1,000), and asking from before what is kept is an error, not a silent gap.
  auto s = Open({.retained_changes = 10});
  for (int i = 0; i < 1020; ++i) {
    ASSERT_TRUE(s->Commit(std::vector<Write>{Put(Job("a"), std::to_string(i))}).ok());
  }
  auto old = s->ChangesAfter(base_ + 5, 10);
  EXPECT_EQ(old.status().code(), StatusCode::kFailedPrecondition);
  auto recent = s->ChangesAfter(base_ + 1015, 10);
  ASSERT_TRUE(recent.ok()) << recent.status().message();
  EXPECT_EQ(recent->size(), 5u);
  // The object as it was at the oldest revision kept.
  auto at = s->GetAt(Job("a"), base_ + 1010);
  ASSERT_TRUE(at.ok()) << at.status().message();
  ASSERT_TRUE(at->has_value());
  EXPECT_EQ((*at)->body, "1009");
}

// A database whose log was compacted before it kept what reads at a revision need serves such
// reads only from when it was opened so.
TEST_F(StoreTest, HistoryOfAnOlderDatabaseStartsWhenItIsOpened) {
  {
    auto s = Open({.retained_changes = 10});
    for (int i = 0; i < 1020; ++i) {
      ASSERT_TRUE(s->Commit(std::vector<Write>{Put(Job("a"), std::to_string(i))}).ok());
    }
  }
  {
    // As such a database: no record of where its history starts.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "DELETE FROM meta WHERE key='history'", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto s = Open({.retained_changes = 10});
  EXPECT_EQ(s->ListAt("Job", std::nullopt, 1019).status().code(), StatusCode::kFailedPrecondition);
  auto now = s->ListAt("Job", std::nullopt, 1020);
  ASSERT_TRUE(now.ok()) << now.status().message();
  ASSERT_EQ(now->size(), 1u);
  EXPECT_EQ((*now)[0].body, "1019");
}

// Reads at a revision, as etcd serves them (and kube-apiserver's lists with
// resourceVersionMatch=Exact): each object as it was then, deleted ones included and those made
// since left out, with its version then.
TEST_P(StoreContract, ReadsAtARevisionSeeTheObjectsAsTheyWereThen) {
  auto s = Open();
  ASSERT_TRUE(s->Commit(std::vector<Write>{Create(Job("a"), "a1"), Create(Job("b"), "b1"),
                                           Create(Job("c", "team-b"), "c1")})
                  .ok());
  const int64_t then = s->Revision();
  const int64_t made = (*s->Get(Job("a")))->version;
  ASSERT_TRUE(s->Commit(std::vector<Write>{Put(Job("a"), "a2"),
                                           {Write::Op::kDelete, Job("b"), "", {}},
                                           Create(Job("d"), "d1")})
                  .ok());
  auto at = s->ListAt("Job", std::nullopt, then);
  ASSERT_TRUE(at.ok()) << at.status().message();
  ASSERT_EQ(at->size(), 3u);
  EXPECT_EQ((*at)[0].key.name, "a");
  EXPECT_EQ((*at)[0].body, "a1");
  EXPECT_EQ((*at)[0].version, made);
  EXPECT_EQ((*at)[1].key.name, "b");
  EXPECT_EQ((*at)[1].body, "b1");
  EXPECT_EQ((*at)[2].key.name, "c");
  auto one_ns = s->ListAt("Job", std::string_view("team-a"), then);
  ASSERT_TRUE(one_ns.ok());
  EXPECT_EQ(one_ns->size(), 2u);
  // Now: as List says.
  auto now = s->ListAt("Job", std::nullopt, s->Revision());
  ASSERT_TRUE(now.ok());
  std::vector<std::string> names;
  for (const StoredObject& o : *now) names.push_back(o.key.name + "=" + o.body);
  EXPECT_EQ(names, (std::vector<std::string>{"a=a2", "d=d1", "c=c1"}));
  // One object.
  auto a = s->GetAt(Job("a"), then);
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->body, "a1");
  EXPECT_EQ((*s->GetAt(Job("b"), then))->body, "b1");
  EXPECT_FALSE(s->GetAt(Job("b"), s->Revision())->has_value());
  EXPECT_FALSE(s->GetAt(Job("d"), then)->has_value());
  EXPECT_EQ(s->GetAt(Job("a"), 0)->has_value(), false);
  // A revision not yet written is an error, not the present.
  EXPECT_EQ(s->ListAt("Job", std::nullopt, s->Revision() + 1).status().code(),
            StatusCode::kInvalidArgument);
}

// Compaction forgets the history up to a revision, as etcd's: reads and watches from before it
// fail, while reads after it still see objects that changed since as they were.
TEST_P(StoreContract, CompactionKeepsWhatLaterReadsNeed) {
  auto s = Open();
  ASSERT_TRUE(
      s->Commit(std::vector<Write>{Create(Job("old"), "o1"), Create(Job("busy"), "b1")}).ok());
  for (int i = 2; i <= 5; ++i) {
    ASSERT_TRUE(s->Commit(std::vector<Write>{Put(Job("busy"), "b" + std::to_string(i))}).ok());
  }
  const int64_t mid = s->Revision();  // busy at b5
  ASSERT_TRUE(s->Commit(std::vector<Write>{Put(Job("busy"), "b6")}).ok());
  ASSERT_TRUE(s->Compact(mid).ok());
  EXPECT_EQ(s->ListAt("Job", std::nullopt, mid - 1).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(s->ChangesAfter(mid - 1, 10).status().code(), StatusCode::kFailedPrecondition);
  auto at = s->ListAt("Job", std::nullopt, mid);
  ASSERT_TRUE(at.ok()) << at.status().message();
  ASSERT_EQ(at->size(), 2u);
  EXPECT_EQ((*at)[0].key.name, "busy");
  EXPECT_EQ((*at)[0].body, "b5");
  EXPECT_EQ((*at)[1].body, "o1");
  auto after = s->ChangesAfter(mid, 10);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ(after->front().object.body, "b6");
  // Compacting past the latest revision compacts to it.
  ASSERT_TRUE(s->Compact(s->Revision() + 100).ok());
  auto latest = s->ListAt("Job", std::nullopt, s->Revision());
  ASSERT_TRUE(latest.ok()) << latest.status().message();
  EXPECT_EQ(latest->size(), 2u);
}

TEST_F(StoreTest, AcknowledgedWritesSurviveKill9) {
  // A child process commits one job per transaction and reports each acknowledged commit on a
  // pipe; it is killed with SIGKILL mid-stream. Every acknowledged job is in the reopened store.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    auto s = OpenSqliteStore(path_);
    if (!s.ok()) _exit(2);
    for (int i = 0;; ++i) {
      if (!(*s)->Commit(std::vector<Write>{Create(Job("j" + std::to_string(i)), "{}")}).ok()) {
        _exit(3);
      }
      if (write(fds[1], &i, sizeof i) != sizeof i) _exit(4);
    }
  }
  close(fds[1]);
  int acked = -1, v;
  while (acked < 300 && read(fds[0], &v, sizeof v) == sizeof v) acked = v;
  kill(child, SIGKILL);
  // Drain what the child acknowledged before it died.
  while (read(fds[0], &v, sizeof v) == sizeof v) acked = v;
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_GE(acked, 300);
  auto s = Open();
  auto jobs = s->List("Job", std::nullopt);
  ASSERT_TRUE(jobs.ok());
  EXPECT_GE(static_cast<int>(jobs->size()), acked + 1);
  for (int i = 0; i <= acked; ++i) {
    EXPECT_TRUE(s->Get(Job("j" + std::to_string(i)))->has_value()) << i;
  }
}

TEST_F(StoreTest, UnopenablePathIsAnError) {
  auto s = OpenSqliteStore("/nonexistent-dir/x/state.db");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cannot open store"), std::string::npos);
}

// The fault-injecting store: a failed commit changes nothing and later ones go on from where
// the store was; failed reads fail only as many times as asked.
TEST(MemoryStoreTest, InjectedFaultsFailWithoutChangingAnything) {
  MemoryStore s;
  ASSERT_TRUE(s.Commit(std::vector<Write>{Create(Job("a"), "1")}).ok());
  s.FailCommits(2, Internal("disk full"));
  for (int i = 0; i < 2; ++i) {
    auto r = s.Commit(std::vector<Write>{Create(Job("b"), "2")});
    EXPECT_EQ(r.status().code(), StatusCode::kInternal);
    EXPECT_EQ(r.status().message(), "disk full");
  }
  EXPECT_EQ(s.Revision(), 1);
  EXPECT_FALSE(s.Get(Job("b"))->has_value());
  EXPECT_EQ((*s.Commit(std::vector<Write>{Create(Job("b"), "2")}))[0], 2);
  EXPECT_EQ(s.commits(), 4);
  s.FailReads(1, Internal("io error"));
  EXPECT_EQ(s.List("Job", std::nullopt).status().code(), StatusCode::kInternal);
  EXPECT_EQ(s.List("Job", std::nullopt)->size(), 2u);
}

}  // namespace
}  // namespace tessera::store
