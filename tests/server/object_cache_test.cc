#include "server/object_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "server/api_server.h"
#include "store/memory_store.h"

namespace tessera::server {
namespace {

using nlohmann::json;

class ObjectCacheTest : public ::testing::Test {
 protected:
  void Commit(std::vector<store::Write> writes) {
    ASSERT_TRUE(store_.Commit(writes).ok());
    feed_.CatchUp();
  }
  static store::Write Put(const std::string& kind, const std::string& ns, const std::string& name,
                          const std::string& body) {
    return {store::Write::Op::kPut, {kind, ns, name}, body, {}};
  }
  static store::Write Delete(const std::string& kind, const std::string& ns,
                             const std::string& name) {
    return {store::Write::Op::kDelete, {kind, ns, name}, "", {}};
  }
  static std::vector<std::string> Names(const std::vector<StoredJson>& list) {
    std::vector<std::string> out;
    for (const StoredJson& o : list) out.push_back(o.obj()["n"]);
    return out;
  }

  store::MemoryStore store_;
  ChangeFeed feed_{store_};
  ObjectCache cache_{store_, feed_};
};

// A listing is the store's objects of the kind, ordered by namespace and name, kept current
// from the feed: added, changed and deleted objects; other kinds untouched; a body that is no
// JSON object skipped.
TEST_F(ObjectCacheTest, ListingsFollowTheFeed) {
  Commit({Put("Job", "b", "x", R"({"n":"b/x"})"), Put("Job", "a", "y", R"({"n":"a/y"})"),
          Put("Queue", "", "q", R"({"n":"q"})")});
  auto first = cache_.List("Job");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(Names(*first), (std::vector<std::string>{"a/y", "b/x"}));
  const std::shared_ptr<const json> kept = (*first)[0].doc;

  Commit({Put("Job", "a", "z", R"({"n":"a/z"})"), Put("Job", "b", "x", R"({"n":"b/x2"})"),
          Delete("Job", "a", "y"), Put("Job", "c", "bad", "[1]")});
  auto second = cache_.List("Job");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(Names(*second), (std::vector<std::string>{"a/z", "b/x2"}));
  EXPECT_EQ((*kept)["n"], "a/y") << "a listing handed out stays as it was";
  EXPECT_EQ((*second)[1].version, store_.Revision() - 2);
  auto queues = cache_.List("Queue");
  ASSERT_TRUE(queues.ok());
  EXPECT_EQ(Names(*queues), std::vector<std::string>{"q"});
  // Unchanged objects are not parsed again: the same document is shared.
  auto third = cache_.List("Job");
  EXPECT_EQ((*third)[0].doc.get(), (*second)[0].doc.get());
}

// Peek gives what the cache holds of one object without reading or parsing (nothing for a kind
// never listed); StoredRead (server/api_server.h) takes its document where the version it read
// from the store is the cache's, and parses the stored body where the cache is behind.
TEST_F(ObjectCacheTest, PeekGivesTheKeptDocumentAndAWritesReadUsesItAtTheSameVersion) {
  Commit({Put("Job", "a", "x", R"({"n":"a/x"})"), Put("Queue", "", "q", R"({"n":"q"})")});
  EXPECT_FALSE(cache_.Peek({"Job", "a", "x"}).has_value());  // Jobs not listed yet
  ASSERT_TRUE(cache_.List("Job").ok());
  auto kept = cache_.Peek({"Job", "a", "x"});
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->obj()["n"], "a/x");
  EXPECT_FALSE(cache_.Peek({"Job", "a", "none"}).has_value());
  EXPECT_FALSE(cache_.Peek({"Queue", "", "q"}).has_value());

  StoredRead same(store_, {"Job", "a", "x"}, &cache_);
  auto parsed = same.Parsed();
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, kept->doc.get());
  // Changed in the store and not yet in the cache (its listing not caught up): parsed anew.
  const std::vector<store::Write> change = {Put("Job", "a", "x", R"({"n":"a/x2"})")};
  ASSERT_TRUE(store_.Commit(change).ok());
  StoredRead newer(store_, {"Job", "a", "x"}, &cache_);
  parsed = newer.Parsed();
  ASSERT_TRUE(parsed.ok());
  EXPECT_NE(*parsed, kept->doc.get());
  EXPECT_EQ((**parsed)["n"], "a/x2");
}

int64_t Pods(const json& job) { return job.value("pods", 0); }

// Tallies per namespace follow creates, changes and deletes.
TEST_F(ObjectCacheTest, TalliesCountAndMeasurePerNamespace) {
  Commit({Put("Job", "a", "j1", R"({"n":"1","pods":2})"),
          Put("Job", "a", "j2", R"({"n":"2","pods":3})"),
          Put("Job", "b", "j3", R"({"n":"3","pods":7})")});
  auto a = cache_.TallyOf("Job", "a", Pods);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->objects, 2);
  EXPECT_EQ(a->measured, 5);
  Commit({Put("Job", "a", "j1", R"({"n":"1","pods":10})"), Delete("Job", "a", "j2")});
  a = cache_.TallyOf("Job", "a", Pods);
  EXPECT_EQ(a->objects, 1);
  EXPECT_EQ(a->measured, 10);
  EXPECT_EQ(cache_.TallyOf("Job", "b", Pods)->measured, 7);
  EXPECT_EQ(cache_.TallyOf("Job", "none", Pods)->objects, 0);
}

// A store that cannot be read is an error, not an empty listing.
TEST_F(ObjectCacheTest, AStoreThatFailsIsAnErrorNotAnEmptyList) {
  Commit({Put("Job", "a", "j", R"({"n":"j"})")});
  store_.FailReads(1, Internal("io error"));
  auto list = cache_.List("Job");
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().message(), "io error");
  auto again = cache_.List("Job");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 1u);
}

}  // namespace
}  // namespace tessera::server
