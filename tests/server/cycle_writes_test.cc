// A scheduling cycle's writes on their own: one transaction, and when an object changed
// meanwhile, that write is lost with its events while the others land.
#include "server/cycle_writes.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/cycle_fixture.h"

namespace tessera::server {
namespace {

using nlohmann::json;

class CycleWritesTest : public CycleStageTest {};

TEST_F(CycleWritesTest, ConflictLosesThatWriteAndItsEventOnly) {
  Apply(JobYaml("stale", 1, 1));
  Apply(JobYaml("fresh", 1, 1));
  auto version = [&](const std::string& name) {
    return std::stoll(Job(name)["metadata"]["resourceVersion"].get<std::string>());
  };
  const int64_t stale_version = version("stale");
  json changed = Job("stale");
  changed["metadata"]["labels"] = {{"edited", "yes"}};
  Put(changed);  // a client wrote it after the cycle read it
  {
    auto writes = Writes();
    json a = Job("stale"), b = Job("fresh");
    a["status"] = {{"phase", "Pending"}, {"message", "lost"}};
    b["status"] = {{"phase", "Pending"}, {"message", "kept"}};
    writes->Put(a, stale_version, CycleWrites::Note{"Normal", "Pending", "lost"});
    writes->Put(b, version("fresh"), CycleWrites::Note{"Normal", "Pending", "kept"});
    writes->Event(b, {"Normal", "Other", "an event on its own"});
    writes->Flush();
    EXPECT_EQ(writes->conflicts(), 1);
    EXPECT_EQ(writes->committed(), 3);  // b, its event, the event on its own
  }
  EXPECT_FALSE(Job("stale")["status"].contains("message"));
  EXPECT_EQ(Job("fresh")["status"]["message"], "kept");
  EXPECT_TRUE(Events("stale").empty());
  EXPECT_EQ(Events("fresh"),
            (std::vector<std::string>{"Pending: kept", "Other: an event on its own"}));
  EXPECT_EQ(revisions_.size(), 3u);
}

}  // namespace
}  // namespace tessera::server
