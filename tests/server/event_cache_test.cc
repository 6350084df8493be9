#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/watch.h"

namespace tessera::server {
namespace {

store::Change JobChange(int64_t revision, const std::string& name) {
  store::Change c;
  c.revision = revision;
  c.type = store::ChangeType::kAdded;
  c.object.key = {"Job", "team-a", name};
  c.object.version = revision;
  c.object.body = nlohmann::json{{"apiVersion", "tessera.io/v1"},
                                 {"kind", "Job"},
                                 {"metadata", {{"name", name}, {"namespace", "team-a"}}}}
                      .dump();
  return c;
}

// On etcd the objects of one transaction share its revision: each keeps its own event.
TEST(EventCacheTest, ChangesAtOneRevisionKeepTheirOwnEvents) {
  EventCache cache;
  const auto a = cache.Get(JobChange(7, "a"));
  const auto b = cache.Get(JobChange(7, "b"));
  EXPECT_NE(a->object.find("\"name\":\"a\""), std::string::npos) << a->object;
  EXPECT_NE(b->object.find("\"name\":\"b\""), std::string::npos) << b->object;
  // Asked again, each is the one rendered before.
  EXPECT_EQ(cache.Get(JobChange(7, "a")), a);
  EXPECT_EQ(cache.Get(JobChange(7, "b")), b);
}

}  // namespace
}  // namespace tessera::server
