// The growth of running elastic gangs (see core/cycle_run.h).
#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "core/cycle_run.h"

namespace tessera::core::cycle {

void CycleRun::GrowRunning() {
  for (Holder& h : holders_) {
    if (h.running_index == kNotRunning || h.victim || h.queue < 0) continue;
    const AdmittedWorkload& a = running_[h.running_index];
    if (std::all_of(a.placements.begin(), a.placements.end(),
                    [](const std::optional<Placement>& p) { return p.has_value(); })) {
      continue;
    }
    GangPods pods = GangOf(a.workload);  // a run per pod set
    for (size_t set = 0; set < pods.num_runs(); ++set) {
      const size_t first = pods.start(set);
      const size_t end = std::min(first + pods.run(set).count, a.placements.size());
      // Why the set's unplaced members from `i` on wait (once one of them does not fit,
      // nothing has changed for the next ones, which are alike), a run of them at a time.
      auto wait_from = [&](size_t i, const std::string& reason) {
        while (i < end) {
          size_t j = i;
          while (j < end && !a.placements[j]) ++j;
          if (j > i) out_.waiting.push_back({h.running_index, i, j - i, reason});
          i = j + 1;
        }
      };
      if (tree_.queue(h.queue).stop != StopPolicy::kNone) {
        const std::string& why = tree_.queue(h.queue).stop_reason;
        wait_from(first, why.empty() ? "queue " + tree_.queue(h.queue).name + " is stopped" : why);
        continue;
      }
      const ResourceFlavors& set_flavors =
          set < h.set_flavors.size() ? h.set_flavors[set] : kNoFlavors;
      bool allowed = true;
      for (int r = 0; r < kNumQuotaResources; ++r) {
        const int f = set_flavors[r];
        bool earlier = false;  // applied for an earlier resource already
        for (int k = 0; k < r; ++k) earlier = earlier || set_flavors[k] == f;
        if (f != kNoFlavor && !earlier) {
          allowed = allowed && ApplyFlavor(tree_.flavor(f), &pods.mutable_pod(set));
        }
      }
      if (!allowed) {
        wait_from(first,
                  "the pod's node selector or GPU models exclude the flavors its job was "
                  "admitted to");
        continue;
      }
      const PodSpec& pod = pods.run(set).pod;
      for (size_t i = first; i < end; ++i) {
        if (a.placements[i]) continue;
        ++out_.placement_attempts;
        PlaceOutcome o = placer_.Schedule(state_, pod);
        if (!o.ok) {
          wait_from(i, o.reason);
          break;
        }
        const std::optional<Placement> one = o.placement;
        const QuotaVector amount = PlacedAmount(state_, std::span(&one, 1));
        const QuotaCharge charge = ChargeOf(set_flavors, amount);
        std::string over = NamespaceExplain(h.ns, amount);
        if (over.empty() && !tree_.Fits(h.queue, charge)) over = tree_.Explain(h.queue, charge);
        if (!over.empty()) {
          (void)placer_.Unreserve(state_, pod, o.placement);
          wait_from(i, over);
          break;
        }
        ChargeUsage(h.queue, h.ns, charge, amount, +1);
        for (int r = 0; r < kNumQuotaResources; ++r) h.amount[r] += amount[r];
        h.charge.Add(charge);
        out_.growths.push_back({h.running_index, i, std::move(o.placement)});
      }
    }
  }
}

}  // namespace tessera::core::cycle
