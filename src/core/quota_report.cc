#include "core/quota_report.h"

#include <algorithm>

namespace tessera::core {

std::vector<QuotaNodeReport> ReportQuotas(const QuotaTree& tree) {
  const int n = tree.num_nodes();
  std::vector<QuotaNodeReport> out(n);
  for (int node = 0; node < n; ++node) {
    QuotaNodeReport& r = out[node];
    r.name = tree.NodeName(node);
    r.is_queue = tree.IsQueueNode(node);
    const int parent = tree.ParentOf(node);
    if (parent >= 0) r.parent = tree.NodeName(parent);
    r.weight_milli = tree.WeightMilli(node);
    r.share_milli = tree.NodeShareMilli(node);
    if (r.is_queue) {
      r.stop = tree.queue(node).stop;
      r.stop_reason = tree.queue(node).stop_reason;
    }
  }
  for (int f = 0; f < tree.num_flavors(); ++f) {
    for (int ri = 0; ri < kNumQuotaResources; ++ri) {
      const auto res = static_cast<QuotaResource>(ri);
      std::vector<QuotaTree::Figures> fig(n);
      for (int node = 0; node < n; ++node) fig[node] = tree.FiguresOf(node, f, res);
      std::vector<QuotaFigures> row(n);
      for (int node = 0; node < n; ++node) {
        const QuotaTree::Figures& x = fig[node];
        QuotaFigures& q = row[node];
        q.flavor = tree.flavor(f).name;
        q.resource = res;
        q.nominal = x.nominal;
        q.borrowing_limit = x.borrowing_limit;
        q.lending_limit = x.lending_limit;
        q.used = x.usage;
        q.borrowed = std::max<int64_t>(0, x.usage - x.subtree);
        q.deserved = x.subtree;
      }
      // Per cohort: what its children borrow beyond its own quota, attributed to the lenders;
      // and each child's weighted part of the cohort's quota.
      for (int c = 0; c < n; ++c) {
        const std::vector<int>& kids = tree.ChildrenOf(c);
        if (kids.empty()) continue;
        int64_t borrowed = 0, weights = 0;
        for (int k : kids) {
          borrowed += row[k].borrowed;
          weights += tree.WeightMilli(k);
        }
        borrowed = std::max<int64_t>(0, borrowed - fig[c].nominal);
        for (int k : kids) {
          int64_t lendable = std::max<int64_t>(0, fig[k].subtree - fig[k].usage);
          if (fig[k].lending_limit >= 0) lendable = std::min(lendable, fig[k].lending_limit);
          row[k].lent = std::min(lendable, borrowed);
          borrowed -= row[k].lent;
          row[k].deserved = weights > 0 ? fig[c].subtree * tree.WeightMilli(k) / weights : 0;
        }
      }
      for (int node = 0; node < n; ++node) {
        const QuotaFigures& q = row[node];
        if (q.nominal == 0 && q.used == 0 && q.borrowing_limit < 0 && q.lending_limit < 0 &&
            fig[node].subtree == 0) {
          continue;
        }
        out[node].figures.push_back(q);
      }
    }
  }
  return out;
}

}  // namespace tessera::core
