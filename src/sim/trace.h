// Cluster traces for the simulator: node lists and pod lists, in the Alibaba GPU trace format
// (openb_node_list_*.csv, openb_pod_list_*.csv) and in Tessera's generic CSV format (see
// docs/SIMULATOR.md). Parsing reads from streams; every error names the source, line and column.
#ifndef TESSERA_SIM_TRACE_H_
#define TESSERA_SIM_TRACE_H_

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "core/node.h"
#include "core/pod.h"
#include "core/status.h"

namespace tessera::sim {

// One pod of a trace.
struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpu = 0;    // cards; a share is one card
  int32_t gpu_milli = 0;  // per card: 1..999 a share of one card, 1000 whole cards, 0 none
  std::vector<std::string> gpu_models;  // accepted models; empty: any
  int64_t creation = -1;                // submit time, seconds; -1 unknown
  int64_t deletion = -1;                // end time, seconds; -1 unknown (runs forever)
  int64_t scheduled = -1;               // when it started in the traced cluster; -1 unknown
  std::string queue;                    // generic format only
  int32_t priority = 0;                 // generic format only
  std::string gang;                     // gang name; empty: not in a gang
  int32_t gang_size = 0;                // members the gang needs (minMember)

  // GPU demand in milli-GPUs (a share counts its milli, whole cards 1000 each).
  int64_t GpuDemandMilli() const { return static_cast<int64_t>(num_gpu) * gpu_milli; }
};

// Reads a node list. Columns (by header): `sn` or `name`, `cpu_milli`, `memory_mib`, `gpu`,
// `model`; optional `sharing` (exclusive | shared, default shared: whole cards and fractional
// shares both allowed, as in the trace's cluster).
Result<std::vector<core::NodeSpec>> ReadNodes(std::istream& in, std::string_view source);

// Reads a pod list. Columns (by header): `name`, `cpu_milli`, `memory_mib`, `num_gpu`,
// `gpu_milli`; optional `gpu_spec`, `creation_time`, `deletion_time`, `qos`, `pod_phase`,
// `scheduled_time` (Alibaba), or `submit_time`, `duration`, `queue`, `priority`, `gang`,
// `gang_size` (generic). Unknown columns are an error.
Result<std::vector<TracePod>> ReadPods(std::istream& in, std::string_view source);

Result<std::vector<core::NodeSpec>> LoadNodes(const std::string& path);
Result<std::vector<TracePod>> LoadPods(const std::string& path);

// The pod as the scheduling core sees it.
core::PodSpec ToPodSpec(const TracePod& p);

// Framebuffer size assumed for a GPU model of the trace (shares are sized in milli-GPUs, so
// this only matters for reporting).
int64_t ModelMemoryMib(std::string_view model);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_TRACE_H_
