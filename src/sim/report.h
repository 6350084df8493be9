// Output of arrival-only simulations: a human table, JSON (one object per policy) and an SVG plot
// of the allocation ratio against the arrived demand.
#ifndef TESSERA_SIM_REPORT_H_
#define TESSERA_SIM_REPORT_H_

#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "sim/arrival.h"
#include "sim/bound.h"
#include "sim/replay.h"

namespace tessera::sim {

// The FGD paper's published allocation (mean of 10 seeds, % at 100% / 130% arrived demand) for a
// policy on one of its traces, when it has one.
struct PaperFigure {
  double at100 = 0;
  double at130 = 0;
};
std::optional<PaperFigure> PaperAllocation(std::string_view trace, std::string_view policy);

// Allocation and fragmentation at the listed demand points, failed pods, wall time; with the
// paper's figure next to Tessera's where the paper has one, and a last row with the bound when
// one is given.
void WriteTable(std::ostream& out, std::string_view trace, std::span<const ArrivalSummary> s,
                const BoundSummary* bound = nullptr);

// One JSON object per line and policy: {"policy", "trace", "seeds", "alloc_at", "frag_ratio_at",
// "frag_gpus_at", "failed_pods", "wall_seconds"}; the *_at maps are keyed by arrived-demand
// percent, every 10% and the last point. With a bound, each object also has "bound_at", keyed by
// the bound's points.
void WriteJson(std::ostream& out, std::string_view trace, std::span<const ArrivalSummary> s,
               const BoundSummary* bound = nullptr);

// A line chart: x = arrived GPU demand (% of capacity), y = GPU allocation (%), one line per
// policy, with axes, ticks, labels and a legend.
void WriteSvg(std::ostream& out, std::string_view trace, std::span<const ArrivalSummary> s);

// Replay mode: a table (mean and peak allocation, queueing delay and completion time percentiles),
// JSON (one object per policy: {"mode": "replay", "policy", "trace", "mean_alloc_pct",
// "alloc_over_time": [[seconds, %], ...], "queue_delay_seconds": {count, mean, p50, p90, p99,
// max}, "jct_seconds": {...}, ...}) and an SVG chart of allocation over time.
void WriteReplayTable(std::ostream& out, std::string_view trace, std::span<const ReplayRun> runs);
void WriteReplayJson(std::ostream& out, std::string_view trace, std::span<const ReplayRun> runs);
void WriteReplaySvg(std::ostream& out, std::string_view trace, std::span<const ReplayRun> runs);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_REPORT_H_
