#include "cli/sim_cmd.h"

#include <charconv>
#include <fstream>
#include <optional>
#include <thread>

#include "core/scheduler.h"
#include "sim/arrival.h"
#include "sim/bound.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/trace.h"

#ifndef TESSERA_DATA_DIR
#define TESSERA_DATA_DIR "data"
#endif

namespace tessera::cli {

namespace {

constexpr const char* kTraceDir = "/traces/alibaba-gpu-v2023/";

bool ParseU64(std::string_view s, uint64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// "42", "42-51", "1,5,9".
Result<std::vector<uint64_t>> ParseSeeds(std::string_view spec) {
  std::vector<uint64_t> out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view part = spec.substr(start, comma - start);
    const size_t dash = part.find('-');
    uint64_t a = 0, b = 0;
    const bool ok = dash == std::string_view::npos
                        ? ParseU64(part, a) && (b = a, true)
                        : ParseU64(part.substr(0, dash), a) && ParseU64(part.substr(dash + 1), b);
    if (!ok || b < a || b - a >= 10000) {
      return InvalidArgument("--seeds: expected N, N-M or a comma list, got \"" +
                             std::string(spec) + "\"");
    }
    for (uint64_t s = a; s <= b; ++s) out.push_back(s);
    start = comma + 1;
  }
  return out;
}

Result<std::vector<std::string>> ParsePolicies(std::string_view spec) {
  const std::vector<std::string> known = core::PolicyNames();
  if (spec == "all") return known;
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string p(spec.substr(start, comma - start));
    if (auto prof = core::ProfileForPolicy(p); !prof.ok()) {
      return InvalidArgument("--policy: " + prof.status().message());
    }
    out.push_back(std::move(p));
    start = comma + 1;
  }
  return out;
}

std::string Stem(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  if (base.size() > 4 && base.substr(base.size() - 4) == ".csv") base.resize(base.size() - 4);
  return base;
}

// Writes `f(stream)` to `path`; the exit code.
template <typename F>
int WritePlot(const std::string& path, std::ostream& err, F f) {
  if (path.empty()) return 0;
  std::ofstream svg(path);
  f(svg);
  if (!svg.good()) {
    err << "tessera sim: cannot write " << path << "\n";
    return 1;
  }
  return 0;
}

int Replay(const SimOptions& o, const sim::Trace& trace, const std::vector<std::string>& policies,
           uint64_t seed, int jobs, std::ostream& out, std::ostream& err) {
  sim::ReplayConfig config;
  config.seed = seed;
  config.speedup = o.speedup;
  auto runs = sim::RunReplays(trace, policies, config, jobs);
  if (!runs.ok()) {
    err << "tessera sim: " << runs.status().message() << "\n";
    return 1;
  }
  if (o.output == "json") {
    sim::WriteReplayJson(out, trace.name, *runs);
  } else {
    sim::WriteReplayTable(out, trace.name, *runs);
  }
  return WritePlot(o.plot, err,
                   [&](std::ostream& svg) { sim::WriteReplaySvg(svg, trace.name, *runs); });
}

}  // namespace

CLI::App* AddSimCommand(CLI::App& app, SimOptions& o) {
  CLI::App* c = app.add_subcommand(
      "sim",
      "Run a cluster trace through the scheduling core: arrival-only (the FGD paper's method) or "
      "a replay of its arrivals and run times through the queue layer");
  c->add_option("--mode", o.mode,
                "arrival (sampled arrivals, never deleted) or replay (creation and deletion times)")
      ->check(CLI::IsMember({"arrival", "replay"}))
      ->capture_default_str();
  c->add_option("--speedup", o.speedup,
                "Replay: arrivals this many times faster, run times unchanged (a busier cluster)")
      ->check(CLI::Range(0.001, 1e6))
      ->capture_default_str();
  c->add_option(
       "--trace", o.trace,
       "Bundled Alibaba trace: default, gpushare40, multigpu20, gpuspec10, gpuspec20, cpu050, "
       "cpu250")
      ->capture_default_str();
  c->add_option("--nodes", o.nodes, "Node list CSV (default: the bundled GPU node list)");
  c->add_option("--pods", o.pods, "Pod list CSV (overrides --trace)");
  c->add_option("--policy", o.policy, "Policy, comma-separated policies, or all")
      ->capture_default_str();
  c->add_option("--seeds", o.seeds, "Seeds: N, N-M or N,M,...")->capture_default_str();
  c->add_option("--inflate", o.inflate, "Arrived GPU demand to reach, x cluster GPU capacity")
      ->capture_default_str();
  c->add_option("--node-order", o.node_order,
                "Arrival: the order nodes join the cluster, which breaks ties between equal "
                "scores: shuffled (drawn from each seed, as the FGD paper's simulator does) or "
                "trace (the node list's order)")
      ->check(CLI::IsMember({"shuffled", "trace"}))
      ->capture_default_str();
  c->add_option("--output", o.output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  c->add_option("--bound", o.bound,
                "Arrival: also report an upper bound on the allocation any placement of the same "
                "arrivals reaches (a linear relaxation solved with GLPK)")
      ->capture_default_str();
  c->add_option("--plot", o.plot, "Write an SVG chart of allocation vs arrived demand");
  c->add_option("--jobs", o.jobs, "Parallel runs (0: one per core)")->check(CLI::Range(0, 1024));
  return c;
}

int RunSim(const SimOptions& o, std::ostream& out, std::ostream& err) {
  const std::string data = std::string(TESSERA_DATA_DIR) + kTraceDir;
  const std::string pods_path =
      o.pods.empty() ? data + "openb_pod_list_" + o.trace + ".csv" : o.pods;
  const std::string nodes_path = o.nodes.empty() ? data + "openb_node_list_gpu_node.csv" : o.nodes;
  auto seeds = ParseSeeds(o.seeds);
  auto policies = ParsePolicies(o.policy);
  for (const Status& s : {seeds.status(), policies.status()}) {
    if (!s.ok()) {
      err << "tessera sim: " << s.message() << "\n";
      return 2;
    }
  }
  if (!(o.inflate > 0 && o.inflate <= 100)) {
    err << "tessera sim: --inflate must be in (0, 100], got " << o.inflate << "\n";
    return 2;
  }
  sim::Trace trace;
  trace.name = Stem(pods_path);
  auto nodes = sim::LoadNodes(nodes_path);
  auto pods = sim::LoadPods(pods_path);
  for (const Status& s : {nodes.status(), pods.status()}) {
    if (!s.ok()) {
      err << "tessera sim: " << s.message() << "\n";
      return 1;
    }
  }
  trace.nodes = std::move(*nodes);
  trace.pods = std::move(*pods);
  const int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (o.mode == "replay") return Replay(o, trace, *policies, (*seeds)[0], jobs, out, err);
  sim::ArrivalConfig config;
  config.inflate = o.inflate;
  config.shuffle_nodes = o.node_order == "shuffled";
  auto runs = sim::RunArrivals(trace, *policies, *seeds, config, jobs);
  if (!runs.ok()) {
    err << "tessera sim: " << runs.status().message() << "\n";
    return 1;
  }
  const std::vector<sim::ArrivalSummary> summary = sim::Summarize(*runs);
  std::optional<sim::BoundSummary> bound;
  if (o.bound) {
    auto b = sim::SummarizeBounds(trace, *seeds, o.inflate, jobs);
    if (!b.ok()) {
      err << "tessera sim: " << b.status().message() << "\n";
      return 1;
    }
    bound = std::move(*b);
  }
  const sim::BoundSummary* bp = bound ? &*bound : nullptr;
  if (o.output == "json") {
    sim::WriteJson(out, trace.name, summary, bp);
  } else {
    sim::WriteTable(out, trace.name, summary, bp);
  }
  return WritePlot(o.plot, err,
                   [&](std::ostream& svg) { sim::WriteSvg(svg, trace.name, summary); });
}

}  // namespace tessera::cli
