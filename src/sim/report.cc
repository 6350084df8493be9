#include "sim/report.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fgd.h"

namespace tessera::sim {

namespace {

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Demand points shown: every 10% and the last one.
std::vector<int> Points(const ArrivalSummary& s) {
  std::vector<int> out;
  const int last = static_cast<int>(s.alloc_pct.size()) - 1;
  for (int k = 10; k <= last; k += 10) out.push_back(k);
  if (last > 0 && (out.empty() || out.back() != last)) out.push_back(last);
  return out;
}

double At(const std::vector<double>& v, int k) {
  return k >= 0 && k < static_cast<int>(v.size()) ? v[k] : 0.0;
}

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::optional<PaperFigure> PaperAllocation(std::string_view trace, std::string_view policy) {
  struct Row {
    std::string_view trace;
    std::string_view policy;
    PaperFigure f;
  };
  // Weng et al., ATC'23: the paper simulator's expected results
  // (experiments/analysis/expected_results/analysis_allo_discrete.csv), mean of its 10 seeds
  // (cpu250 dotproduct: the 9 of them other than seed 49).
  static const Row kRows[] = {
      {"default", "random", {86.30, 87.47}},
      {"default", "dotproduct", {90.62, 90.85}},
      {"default", "gpupacking", {91.78, 92.00}},
      {"default", "bestfit", {92.86, 93.08}},
      {"default", "fgd", {95.23, 95.39}},
      {"gpushare40", "random", {84.86, 86.00}},
      {"gpushare40", "dotproduct", {89.30, 89.56}},
      {"gpushare40", "gpupacking", {89.77, 90.03}},
      {"gpushare40", "bestfit", {91.44, 91.69}},
      {"gpushare40", "fgd", {93.96, 94.15}},
      {"multigpu20", "random", {86.92, 88.69}},
      {"multigpu20", "dotproduct", {91.85, 92.06}},
      {"multigpu20", "gpupacking", {93.50, 93.71}},
      {"multigpu20", "bestfit", {93.73, 93.93}},
      {"multigpu20", "fgd", {95.53, 95.65}},
      {"gpuspec10", "random", {86.26, 87.43}},
      {"gpuspec10", "dotproduct", {90.17, 90.39}},
      {"gpuspec10", "gpupacking", {92.24, 92.46}},
      {"gpuspec10", "bestfit", {93.10, 93.30}},
      {"gpuspec10", "fgd", {94.66, 94.95}},
      {"gpuspec20", "random", {85.90, 87.24}},
      {"gpuspec20", "dotproduct", {88.29, 89.97}},
      {"gpuspec20", "gpupacking", {89.28, 92.94}},
      {"gpuspec20", "bestfit", {88.46, 93.30}},
      {"gpuspec20", "fgd", {94.66, 94.84}},
      {"cpu050", "random", {89.02, 91.24}},
      {"cpu050", "dotproduct", {93.03, 93.27}},
      {"cpu050", "gpupacking", {93.46, 93.72}},
      {"cpu050", "bestfit", {93.56, 93.79}},
      {"cpu050", "fgd", {95.00, 95.21}},
      {"cpu250", "random", {80.00, 80.41}},
      {"cpu250", "dotproduct", {83.62, 83.85}},
      {"cpu250", "gpupacking", {88.05, 88.28}},
      {"cpu250", "bestfit", {91.21, 91.45}},
      {"cpu250", "fgd", {93.20, 93.41}},
  };
  for (const Row& r : kRows) {
    const std::string suffix = "_" + std::string(r.trace);
    const bool match = trace == r.trace || (trace.size() >= suffix.size() &&
                                            trace.substr(trace.size() - suffix.size()) == suffix);
    if (match && policy == r.policy) return r.f;
  }
  return std::nullopt;
}

void WriteTable(std::ostream& out, std::string_view trace, std::span<const ArrivalSummary> s,
                const BoundSummary* bound) {
  if (s.empty()) return;
  const int last = static_cast<int>(s[0].alloc_pct.size()) - 1;
  const int mid = std::min(100, last);
  out << "trace " << trace << ", " << s[0].seeds << " seed(s); GPU allocation % at arrived GPU "
      << "demand (% of capacity)\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-11s %8s %8s %10s %10s %12s %9s  %s\n", "policy",
                ("@" + std::to_string(mid)).c_str(), ("@" + std::to_string(last)).c_str(),
                "frag@80", "frag@last", "failed pods", "wall s", "paper @100/@130");
  out << line;
  for (const ArrivalSummary& a : s) {
    auto paper = PaperAllocation(trace, a.policy);
    std::string ref = paper ? Fixed(paper->at100, 2) + " / " + Fixed(paper->at130, 2) : "-";
    std::snprintf(line, sizeof line, "%-11s %8s %8s %9s%% %9s%% %12s %9s  %s\n", a.policy.c_str(),
                  Fixed(At(a.alloc_pct, mid), 2).c_str(), Fixed(At(a.alloc_pct, last), 2).c_str(),
                  Fixed(At(a.frag_pct, std::min(80, last)), 1).c_str(),
                  Fixed(At(a.frag_pct, last), 1).c_str(), Fixed(a.failed_pods, 1).c_str(),
                  Fixed(a.wall_seconds, 2).c_str(), ref.c_str());
    out << line;
  }
  if (bound != nullptr && !bound->pct.empty()) {
    std::snprintf(line, sizeof line, "%-11s %8s %8s %10s %10s %12s %9s  %s\n", "bound",
                  Fixed(bound->pct.front(), 2).c_str(), Fixed(bound->pct.back(), 2).c_str(), "-",
                  "-", "-", "-", "-");
    out << line;
  }
  out << "\nfrag: fragmented share of the unallocated GPU capacity, measured against the "
         "trace's typical pods (the shapes of "
      << core::kTypicalCoveragePercent << "% of its pods).\n";
  if (bound != nullptr) {
    out << "bound: no placement of the same arrivals allocates more, online or offline (a linear "
           "relaxation per node class and GPU model; docs/SIMULATOR.md).\n";
  }
}

void WriteJson(std::ostream& out, std::string_view trace, std::span<const ArrivalSummary> s,
               const BoundSummary* bound) {
  for (const ArrivalSummary& a : s) {
    nlohmann::ordered_json j;
    j["policy"] = a.policy;
    j["trace"] = trace;
    j["seeds"] = a.seeds;
    nlohmann::ordered_json alloc = nlohmann::ordered_json::object();
    nlohmann::ordered_json frag = nlohmann::ordered_json::object();
    nlohmann::ordered_json frag_gpus = nlohmann::ordered_json::object();
    for (int k : Points(a)) {
      const std::string key = std::to_string(k);
      alloc[key] = std::round(At(a.alloc_pct, k) * 100) / 100;
      frag[key] = std::round(At(a.frag_pct, k) * 100) / 100;
      frag_gpus[key] = std::round(At(a.frag_gpus, k) * 100) / 100;
    }
    j["alloc_at"] = alloc;
    j["frag_ratio_at"] = frag;
    j["frag_gpus_at"] = frag_gpus;
    j["failed_pods"] = a.failed_pods;
    j["wall_seconds"] = std::round(a.wall_seconds * 1000) / 1000;
    if (bound != nullptr) {
      nlohmann::ordered_json b = nlohmann::ordered_json::object();
      for (size_t k = 0; k < bound->at.size(); ++k) {
        b[std::to_string(bound->at[k])] = std::round(bound->pct[k] * 100) / 100;
      }
      j["bound_at"] = b;
    }
    out << j.dump() << "\n";
  }
}

namespace {

struct ChartLine {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y in %)
};

// A line chart with y in 0-100 %, x in [0, x_max] with a tick every x_step, a legend.
void WriteLineChart(std::ostream& out, std::string_view title, std::string_view x_label,
                    double x_max, double x_step, std::string_view y_label,
                    std::span<const ChartLine> lines) {
  constexpr int kW = 760, kH = 480, kLeft = 70, kRight = 170, kTop = 50, kBottom = 60;
  const int pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto x = [&](double v) { return kLeft + pw * v / x_max; };
  auto y = [&](double v) { return kTop + ph * (1.0 - v / 100.0); };
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                  "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH
      << "\" viewBox=\"0 0 " << kW << " " << kH
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kW / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">"
      << Escape(title) << "</text>\n";
  for (int v = 0; v <= 100; v += 10) {  // y grid and ticks
    out << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\"" << y(v) << "\" y2=\""
        << y(v) << "\" stroke=\"#e0e0e0\"/>\n"
        << "<text x=\"" << kLeft - 8 << "\" y=\"" << y(v) + 4 << "\" text-anchor=\"end\">" << v
        << "</text>\n";
  }
  for (double v = 0; v <= x_max + 1e-9; v += x_step) {  // x grid and ticks
    out << "<line x1=\"" << x(v) << "\" x2=\"" << x(v) << "\" y1=\"" << kTop << "\" y2=\""
        << kTop + ph << "\" stroke=\"#f0f0f0\"/>\n"
        << "<text x=\"" << x(v) << "\" y=\"" << kTop + ph + 18 << "\" text-anchor=\"middle\">"
        << Fixed(v, x_step < 1 ? 1 : 0) << "</text>\n";
  }
  out << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw << "\" height=\"" << ph
      << "\" fill=\"none\" stroke=\"black\"/>\n"
      << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kH - 15 << "\" text-anchor=\"middle\">"
      << Escape(x_label) << "</text>\n"
      << "<text transform=\"translate(20," << kTop + ph / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << Escape(y_label) << "</text>\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    const char* color = kColors[i % std::size(kColors)];
    out << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
    for (const auto& [px, py] : lines[i].points) {
      out << Fixed(x(px), 1) << "," << Fixed(y(py), 1) << " ";
    }
    out << "\"/>\n";
    const int ly = kTop + 10 + static_cast<int>(i) * 20;
    out << "<line x1=\"" << kLeft + pw + 15 << "\" x2=\"" << kLeft + pw + 40 << "\" y1=\"" << ly
        << "\" y2=\"" << ly << "\" stroke=\"" << color << "\" stroke-width=\"2\"/>\n"
        << "<text x=\"" << kLeft + pw + 46 << "\" y=\"" << ly + 4 << "\">" << Escape(lines[i].name)
        << "</text>\n";
  }
  out << "</svg>\n";
}

}  // namespace

void WriteSvg(std::ostream& out, std::string_view trace, std::span<const ArrivalSummary> s) {
  int xmax = 0;
  for (const ArrivalSummary& a : s) xmax = std::max<int>(xmax, a.alloc_pct.size() - 1);
  xmax = std::max(10, (xmax + 9) / 10 * 10);
  std::vector<ChartLine> lines;
  for (const ArrivalSummary& a : s) {
    ChartLine& l = lines.emplace_back();
    l.name = a.policy;
    for (size_t k = 0; k < a.alloc_pct.size(); ++k) {
      l.points.emplace_back(static_cast<double>(k), a.alloc_pct[k]);
    }
  }
  WriteLineChart(out, "GPU allocation vs arrived demand: " + std::string(trace),
                 "Arrived GPU demand (% of cluster GPU capacity)", xmax, 10,
                 "GPU allocation ratio (%)", lines);
}

void WriteReplayTable(std::ostream& out, std::string_view trace, std::span<const ReplayRun> runs) {
  out << "Replay of " << trace << " (arrivals at creation times, traced run times, queue layer)\n";
  if (!runs.empty()) {
    out << runs[0].workloads << " workloads over " << Fixed(runs[0].span_s / 86400.0, 1)
        << " days\n";
  }
  char line[256];
  std::snprintf(line, sizeof line, "%-11s %9s %9s %27s %27s %8s %7s %8s\n", "policy", "alloc%",
                "peak%", "queue delay p50/p90/p99 s", "JCT p50/p90/p99 s", "waiting", "preempt",
                "wall s");
  out << line;
  auto triple = [](const Percentiles& p) {
    return Fixed(p.p50, 0) + " / " + Fixed(p.p90, 0) + " / " + Fixed(p.p99, 0);
  };
  for (const ReplayRun& r : runs) {
    std::snprintf(line, sizeof line, "%-11s %9s %9s %27s %27s %8lld %7lld %8s\n", r.policy.c_str(),
                  Fixed(r.mean_alloc_pct, 2).c_str(), Fixed(r.peak_alloc_pct, 2).c_str(),
                  triple(r.queue_delay_s).c_str(), triple(r.jct_s).c_str(),
                  static_cast<long long>(r.never_admitted), static_cast<long long>(r.preemptions),
                  Fixed(r.wall_seconds, 2).c_str());
    out << line;
  }
  out << "\nalloc%: time-weighted mean GPU allocation; waiting: never admitted by the end.\n";
}

void WriteReplayJson(std::ostream& out, std::string_view trace, std::span<const ReplayRun> runs) {
  auto percentiles = [](const Percentiles& p) {
    nlohmann::ordered_json j;
    j["count"] = p.count;
    j["mean"] = std::round(p.mean * 10) / 10;
    j["p50"] = p.p50;
    j["p90"] = p.p90;
    j["p99"] = p.p99;
    j["max"] = p.max;
    return j;
  };
  for (const ReplayRun& r : runs) {
    nlohmann::ordered_json j;
    j["mode"] = "replay";
    j["policy"] = r.policy;
    j["trace"] = trace;
    j["workloads"] = r.workloads;
    j["span_seconds"] = r.span_s;
    j["mean_alloc_pct"] = std::round(r.mean_alloc_pct * 100) / 100;
    j["peak_alloc_pct"] = std::round(r.peak_alloc_pct * 100) / 100;
    nlohmann::ordered_json over_time = nlohmann::ordered_json::array();
    for (const auto& [t, a] : r.alloc_pct) {
      over_time.push_back({t, std::round(a * 100) / 100});
    }
    j["alloc_over_time"] = over_time;
    j["queue_delay_seconds"] = percentiles(r.queue_delay_s);
    j["jct_seconds"] = percentiles(r.jct_s);
    j["admitted"] = r.admitted;
    j["completed"] = r.completed;
    j["never_admitted"] = r.never_admitted;
    j["preemptions"] = r.preemptions;
    j["cycles"] = r.cycles;
    j["wall_seconds"] = std::round(r.wall_seconds * 1000) / 1000;
    out << j.dump() << "\n";
  }
}

void WriteReplaySvg(std::ostream& out, std::string_view trace, std::span<const ReplayRun> runs) {
  double days = 0;
  std::vector<ChartLine> lines;
  for (const ReplayRun& r : runs) {
    days = std::max(days, r.span_s / 86400.0);
    ChartLine& l = lines.emplace_back();
    l.name = r.policy;
    for (const auto& [t, a] : r.alloc_pct) l.points.emplace_back(t / 86400.0, a);
  }
  const double step = days <= 1 ? 0.1 : std::ceil(days / 10);
  const double xmax = std::max(step, std::ceil(days / step) * step);
  WriteLineChart(out, "GPU allocation over time (replay): " + std::string(trace),
                 "Days since the first arrival", xmax, step, "GPU allocation ratio (%)", lines);
}

}  // namespace tessera::sim
