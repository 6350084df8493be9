// The fixture of the scheduling cycle's stage tests: the objects applied through the API server
// (as LoopTest), each stage then run on its own over the control plane.
#ifndef TESSERA_TESTS_SERVER_CYCLE_FIXTURE_H_
#define TESSERA_TESTS_SERVER_CYCLE_FIXTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "core/scheduler.h"
#include "server/cycle_decide.h"
#include "server/cycle_read.h"
#include "server/cycle_record.h"
#include "server/cycle_writes.h"
#include "server/loop_fixture.h"

namespace tessera::server {

class CycleStageTest : public LoopTest {
 protected:
  // A Job of the tessera.io kind: `replicas` pods of one task with `gpus` GPUs each, in local
  // queue `queue` (none when empty); `extra` is added to its spec.
  std::string JobYaml(const std::string& name, int replicas, int gpus,
                      const std::string& queue = "", const std::string& extra = "") {
    return "apiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: " + name + "}\nspec:\n" +
           (queue.empty() ? "" : "  queue: " + queue + "\n") + extra +
           "  tasks:\n  - {name: worker, replicas: " + std::to_string(replicas) +
           ", command: [\"true\"], resources: {limits: {nvidia.com/gpu: " + std::to_string(gpus) +
           "}}}\n";
  }
  // The writes of one stage at now_, committed when the returned object goes.
  std::unique_ptr<CycleWrites> Writes() {
    return std::make_unique<CycleWrites>(*plane_, now_, event_seq_, revisions_);
  }
  // A snapshot at now_ by `reader`, its writes committed.
  CycleSnapshot Read(CycleReader& reader) { return reader.Read(now_, *Writes()); }
  // The core's decision over `snap`.
  Decision Decide(CycleSnapshot& snap) {
    auto placer = core::Scheduler::Create({});
    EXPECT_TRUE(placer.ok());
    auto d = server::Decide(snap, **placer, {}, {}, now_);
    EXPECT_TRUE(d.ok()) << d.status().message();
    return d.ok() ? std::move(d).value() : Decision{};
  }

  // Past the loop's own (its events at the same time are named apart from the stages').
  int64_t event_seq_ = 1'000'000;
  std::vector<int64_t> revisions_;
};

}  // namespace tessera::server

#endif  // TESSERA_TESTS_SERVER_CYCLE_FIXTURE_H_
