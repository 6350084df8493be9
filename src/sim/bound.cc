#include "sim/bound.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>

#include "core/resources.h"
#include "sim/glpk.h"
#include "sim/parallel.h"

namespace tessera::sim {

namespace {

constexpr int64_t kCard = core::kMilliPerGpu;

// Pods of one shape and how many of them arrived.
struct Shape {
  int64_t cpu = 0;
  int64_t mem = 0;
  int32_t cards = 0;  // whole cards; 0 for a share
  int32_t share = 0;  // milli of one card; 0 for whole cards
  std::vector<std::string> models;
  int64_t count = 0;
  int64_t DemandMilli() const { return cards > 0 ? cards * kCard : share; }
};

// Nodes of one class.
struct NodeClass {
  int64_t cpu = 0;
  int64_t mem = 0;
  int32_t cards = 0;
  std::string model;
  bool shares = false;  // every card takes fractional shares
  int64_t count = 0;
};

class ShapeCounter {
 public:
  void Add(const TracePod& p) {
    if (p.GpuDemandMilli() <= 0) return;  // a pod without GPUs adds nothing to the objective
    std::vector<std::string> models = p.gpu_models;
    std::sort(models.begin(), models.end());
    const bool whole = p.gpu_milli >= kCard;
    Key key{p.cpu_milli, p.memory_mib, whole ? p.num_gpu : 0, whole ? 0 : p.gpu_milli, models};
    auto [it, added] = index_.try_emplace(std::move(key), shapes_.size());
    if (added) {
      shapes_.push_back({p.cpu_milli, p.memory_mib, whole ? p.num_gpu : 0, whole ? 0 : p.gpu_milli,
                         std::move(models), 0});
    }
    ++shapes_[it->second].count;
  }
  const std::vector<Shape>& shapes() const { return shapes_; }

 private:
  using Key = std::tuple<int64_t, int64_t, int32_t, int32_t, std::vector<std::string>>;
  std::map<Key, size_t> index_;
  std::vector<Shape> shapes_;
};

std::vector<NodeClass> ClassesOf(std::span<const core::NodeSpec> nodes) {
  std::map<std::tuple<int64_t, int64_t, int32_t, std::string, bool>, int64_t> count;
  for (const core::NodeSpec& n : nodes) {
    if (n.gpus.empty()) continue;  // holds no GPU pod's cards
    const bool shares = std::all_of(n.gpus.begin(), n.gpus.end(), [](const core::GpuDevice& g) {
      return g.sharing.mode == core::SharingMode::kShared;
    });
    ++count[{n.allocatable.cpu_milli, n.allocatable.memory_mib, static_cast<int32_t>(n.gpus.size()),
             n.gpus[0].model, shares}];
  }
  std::vector<NodeClass> out;
  for (const auto& [k, c] : count) {
    out.push_back(
        {std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), std::get<4>(k), c});
  }
  return out;
}

bool Fits(const Shape& s, const NodeClass& k) {
  if (s.cpu > k.cpu || s.mem > k.mem || s.cards > k.cards) return false;
  return s.models.empty() || std::binary_search(s.models.begin(), s.models.end(), k.model);
}

// Fekete and Schepers' dual-feasible function u^(k) for capacity c: items summing to at most c
// keep summing to at most c after it.
double RoundToFractions(int64_t x, int64_t c, int k) {
  if (((k + 1) * x) % c == 0) return static_cast<double>(x);
  return static_cast<double>(((k + 1) * x) / c) * static_cast<double>(c) / k;
}

// What a pod of shape `s` counts against one card-level cut `f` of a class: whole cards are
// full cards under every cut; on cards that take no shares a share holds a card of its own.
using CardCut = std::function<double(int64_t share)>;

std::vector<CardCut> CardCuts(const std::vector<Shape>& shapes) {
  std::vector<CardCut> cuts;
  cuts.push_back([](int64_t x) { return static_cast<double>(x); });
  std::set<int32_t> large;
  for (const Shape& s : shapes) {
    if (s.share > kCard / 2) large.insert(s.share);
  }
  // A share of at least `big` (> half a card) leaves at most kCard - big on its card, where only
  // shares of at most that fit: they count 0 and it counts the whole card.
  for (int32_t big : large) {
    cuts.push_back([big](int64_t x) {
      if (x >= big) return static_cast<double>(kCard);
      if (x <= kCard - big) return 0.0;
      return static_cast<double>(x);
    });
  }
  for (int k = 1; k <= 6; ++k) {
    cuts.push_back([k](int64_t x) { return RoundToFractions(x, kCard, k); });
  }
  return cuts;
}

std::mutex glpk_mu;  // GLPK keeps per-thread state only when built for it; one solve at a time

Result<int64_t> Solve(const std::vector<NodeClass>& classes, const std::vector<Shape>& shapes) {
  int64_t demand = 0;
  for (const Shape& s : shapes) demand += s.DemandMilli() * s.count;
  if (demand == 0 || classes.empty()) return int64_t{0};

  // Columns: y[t][k] for the (shape, class) pairs where one pod fits one node.
  struct Col {
    size_t shape;
    size_t cls;
  };
  std::vector<Col> cols;
  for (size_t t = 0; t < shapes.size(); ++t) {
    for (size_t k = 0; k < classes.size(); ++k) {
      if (Fits(shapes[t], classes[k])) cols.push_back({t, k});
    }
  }
  if (cols.empty()) return int64_t{0};

  // Rows, each a list of (column, coefficient) with an upper bound.
  struct Row {
    double rhs;
    std::vector<std::pair<int, double>> terms;
  };
  std::vector<Row> rows;
  std::vector<std::vector<int>> by_shape(shapes.size()), by_class(classes.size());
  for (size_t c = 0; c < cols.size(); ++c) {
    by_shape[cols[c].shape].push_back(static_cast<int>(c));
    by_class[cols[c].cls].push_back(static_cast<int>(c));
  }
  for (size_t t = 0; t < shapes.size(); ++t) {
    if (by_shape[t].empty()) continue;
    Row r{static_cast<double>(shapes[t].count), {}};
    for (int c : by_shape[t]) r.terms.push_back({c, 1.0});
    rows.push_back(std::move(r));
  }
  const std::vector<CardCut> card_cuts = CardCuts(shapes);
  for (size_t k = 0; k < classes.size(); ++k) {
    const NodeClass& nc = classes[k];
    const auto n = static_cast<double>(nc.count);
    auto add = [&](double rhs, const std::function<double(const Shape&)>& coef) {
      Row r{rhs, {}};
      for (int c : by_class[k]) {
        const double a = coef(shapes[cols[c].shape]);
        if (a != 0) r.terms.push_back({c, a});
      }
      if (!r.terms.empty()) rows.push_back(std::move(r));
    };
    // CPU and memory of the class, and a pod of more than 1/2 (1/3) of a node's CPU or memory
    // leaves room for at most one (two) such pods.
    for (int j = 0; j <= 2; ++j) {
      add(n * nc.cpu, [&](const Shape& s) {
        return j == 0 ? static_cast<double>(s.cpu) : RoundToFractions(s.cpu, nc.cpu, j);
      });
      add(n * nc.mem, [&](const Shape& s) {
        return j == 0 ? static_cast<double>(s.mem) : RoundToFractions(s.mem, nc.mem, j);
      });
    }
    // Cards, summed over the class's cards.
    for (const CardCut& f : card_cuts) {
      add(n * nc.cards * kCard, [&](const Shape& s) {
        if (s.cards > 0) return static_cast<double>(s.cards * kCard);
        return nc.shares ? f(s.share) : static_cast<double>(kCard);
      });
    }
    // Whole cards of a node: a pod of more than half a node's cards leaves room for no other.
    for (int j = 1; j <= 3 && nc.cards >= 2; ++j) {
      add(n * nc.cards, [&](const Shape& s) {
        return s.cards > 0 ? RoundToFractions(s.cards, nc.cards, j) : 0.0;
      });
    }
  }

  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  for (size_t i = 0; i < rows.size(); ++i) {
    for (const auto& [c, a] : rows[i].terms) {
      ia.push_back(static_cast<int>(i) + 1);
      ja.push_back(c + 1);
      ar.push_back(a);
    }
  }
  auto glpk = LoadGlpk();
  if (!glpk.ok()) return glpk.status();
  const Glpk& g = **glpk;
  std::lock_guard<std::mutex> lock(glpk_mu);
  g.term_out(GLP_OFF);
  glp_prob* lp = g.create_prob();
  g.set_obj_dir(lp, GLP_MAX);
  g.add_rows(lp, static_cast<int>(rows.size()));
  for (size_t i = 0; i < rows.size(); ++i) {
    g.set_row_bnds(lp, static_cast<int>(i) + 1, GLP_UP, 0.0, rows[i].rhs);
  }
  g.add_cols(lp, static_cast<int>(cols.size()));
  for (size_t c = 0; c < cols.size(); ++c) {
    g.set_col_bnds(lp, static_cast<int>(c) + 1, GLP_LO, 0.0, 0.0);
    g.set_obj_coef(lp, static_cast<int>(c) + 1,
                   static_cast<double>(shapes[cols[c].shape].DemandMilli()));
  }
  g.load_matrix(lp, static_cast<int>(ar.size()) - 1, ia.data(), ja.data(), ar.data());
  g.scale_prob(lp, GLP_SF_AUTO);
  glp_smcp parm;
  g.init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;
  const int rc = g.simplex(lp, &parm);
  const int status = g.get_status(lp);
  const double obj = g.get_obj_val(lp);
  g.delete_prob(lp);
  if (rc != 0 || status != GLP_OPT) {
    return Internal("the bound's linear program was not solved (glp_simplex " + std::to_string(rc) +
                    ", status " + std::to_string(status) + ")");
  }
  // Allocations are whole milli-GPUs. The margin (a millionth, above the solver's feasibility
  // tolerance) keeps rounding from taking the result below the relaxation's optimum.
  return std::min(demand, static_cast<int64_t>(std::floor(obj * (1 + 1e-6) + 1e-3)));
}

}  // namespace

Result<int64_t> AllocationBoundMilli(std::span<const core::NodeSpec> nodes,
                                     std::span<const TracePod> pods) {
  ShapeCounter counter;
  for (const TracePod& p : pods) counter.Add(p);
  return Solve(ClassesOf(nodes), counter.shapes());
}

Result<std::vector<double>> ArrivalBoundPct(const Trace& trace, uint64_t seed, double inflate,
                                            std::span<const int> at_pct) {
  auto built = BuildCluster(trace.nodes);
  if (!built.ok()) return built.status();
  const int64_t capacity = built->total_gpu_milli();
  if (capacity == 0) return InvalidArgument("the cluster has no GPUs");
  if (!(inflate > 0) || inflate > 100) return InvalidArgument("inflate must be in (0, 100]");
  const auto target = static_cast<int64_t>(std::ceil(inflate * capacity));
  const std::vector<uint32_t> arrivals = SampleArrivals(trace.pods, seed, target);
  const std::vector<NodeClass> classes = ClassesOf(trace.nodes);
  std::vector<double> out;
  // The points ascend, so each one's arrivals extend the previous one's.
  ShapeCounter counter;
  int64_t arrived = 0;
  size_t next = 0;
  for (int pct : at_pct) {
    for (; next < arrivals.size(); ++next) {
      if (arrived * 100 >= static_cast<int64_t>(pct) * capacity) break;
      counter.Add(trace.pods[arrivals[next]]);
      arrived += trace.pods[arrivals[next]].GpuDemandMilli();
    }
    auto milli = Solve(classes, counter.shapes());
    if (!milli.ok()) return milli.status();
    out.push_back(100.0 * static_cast<double>(*milli) / static_cast<double>(capacity));
  }
  return out;
}

Result<BoundSummary> SummarizeBounds(const Trace& trace, std::span<const uint64_t> seeds,
                                     double inflate, int jobs) {
  BoundSummary out;
  const int last = static_cast<int>(std::floor(inflate * 100 + 1e-9));
  out.at = {std::min(100, last)};
  if (last > out.at[0]) out.at.push_back(last);
  std::vector<std::vector<double>> per_seed(seeds.size());
  TESSERA_RETURN_IF_ERROR(ParallelFor(seeds.size(), jobs, [&](size_t i) {
    auto r = ArrivalBoundPct(trace, seeds[i], inflate, out.at);
    if (!r.ok()) return r.status();
    per_seed[i] = std::move(*r);
    return Status::Ok();
  }));
  out.seeds = static_cast<int>(seeds.size());
  out.pct.assign(out.at.size(), 0.0);
  for (const std::vector<double>& v : per_seed) {
    for (size_t k = 0; k < v.size(); ++k) out.pct[k] += v[k] / static_cast<double>(seeds.size());
  }
  return out;
}

}  // namespace tessera::sim
