// Runs of the simulator spread over threads; results land by index, so they are identical to a
// serial run whatever the thread count.
#ifndef TESSERA_SIM_PARALLEL_H_
#define TESSERA_SIM_PARALLEL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include "core/cluster_state.h"
#include "core/status.h"

namespace tessera::sim {

// Calls `run(k)` (returning Status) for k in [0, total) on up to `jobs` threads; the first error
// by index is returned.
template <typename Run>
Status ParallelFor(size_t total, int jobs, Run run) {
  std::vector<Status> errors(total, Status::Ok());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k = next++; k < total; k = next++) errors[k] = run(k);
  };
  const int threads = std::max(1, std::min<int>(jobs, static_cast<int>(total)));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (const Status& s : errors) {
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

// The cluster of a trace's node list.
inline Result<core::ClusterState> BuildCluster(const std::vector<core::NodeSpec>& nodes) {
  core::ClusterState state;
  for (const core::NodeSpec& n : nodes) {
    auto id = state.AddNode(n);
    if (!id.ok()) return id.status();
  }
  return state;
}

}  // namespace tessera::sim

#endif  // TESSERA_SIM_PARALLEL_H_
