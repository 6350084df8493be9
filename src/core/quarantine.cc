#include "core/quarantine.h"

#include <algorithm>

namespace tessera::core {

namespace {

std::string Gpu(int64_t gpu) { return "GPU " + std::to_string(gpu); }

std::string Minutes(int64_t ms) { return std::to_string(ms / 60'000) + " min"; }

// Gives back a GPU that was reset after its quarantine began and passes its checks, with no Xid
// since the reset.
bool PassedAfterReset(const QuarantinedGpu& q, const NodeHealthReport& n, int64_t* reset_at) {
  if (!n.passing.contains(q.gpu)) return false;
  int64_t last_ok = -1;
  for (const GpuReset& r : n.resets) {
    if (r.gpu == q.gpu && r.ok && r.at_ms > q.since_ms) last_ok = std::max(last_ok, r.at_ms);
  }
  if (last_ok < 0) return false;
  for (const XidSeenAt& x : n.xids) {
    if (x.gpu == q.gpu && x.at_ms > last_ok) return false;
  }
  *reset_at = last_ok;
  return true;
}

class Deciding {
 public:
  Deciding(const std::vector<NodeHealthReport>& nodes, const QuarantinePolicy& p, int64_t now)
      : nodes_(nodes), policy_(p), now_(now) {
    int64_t total = 0, largest = 0;
    for (const NodeHealthReport& n : nodes) {
      total += n.gpu_count;
      largest = std::max(largest, n.gpu_count);
      in_window_ += InWindow(n.state, n.gpu_count);
    }
    out_.breaker_limit = BreakerLimit(total, largest, p.breaker_percent);
  }

  QuarantineOutcome Run() {
    for (const NodeHealthReport& n : nodes_) {
      NodeQuarantine st = n.state;
      Lift(n, &st);
      Act(n, &st);
      if (!(st == n.state)) out_.changed.emplace_back(n.node, std::move(st));
    }
    out_.quarantined_in_window = in_window_;
    out_.breaker_open = in_window_ >= out_.breaker_limit;
    return std::move(out_);
  }

 private:
  // GPUs a node's quarantines started within the window cover.
  int64_t InWindow(const NodeQuarantine& st, int64_t gpu_count) const {
    const int64_t from = now_ - policy_.window_ms;
    if (st.reboot && st.reboot->since_ms >= from) return gpu_count;
    int64_t n = 0;
    for (const QuarantinedGpu& q : st.gpus) n += q.since_ms >= from ? 1 : 0;
    return n;
  }

  void Event(const std::string& node, bool warning, std::string reason, std::string message) {
    out_.events.push_back({node, warning, std::move(reason), std::move(message)});
  }

  void Lift(const NodeHealthReport& n, NodeQuarantine* st) {
    if (st->reboot && !n.boot_id.empty() && n.boot_id != st->reboot->boot_id) {
      Event(n.node, false, "NodeRebooted",
            "node " + n.node + " booted again after it was marked for reboot (" +
                DescribeXid(st->reboot->xid) + "): it takes work again");
      st->reboot.reset();
    }
    std::erase_if(st->gpus, [&](const QuarantinedGpu& q) {
      int64_t reset_at = 0;
      if (!PassedAfterReset(q, n, &reset_at)) return false;
      Event(
          n.node, false, "GpuReturned",
          Gpu(q.gpu) + " of node " + n.node + " was reset and passes its checks: back in service");
      return true;
    });
  }

  bool Breaker(const NodeHealthReport& n, const XidSeenAt& x, int64_t cost) {
    if (in_window_ + cost <= out_.breaker_limit) return false;
    Event(n.node, true, "QuarantineCircuitBreakerOpen",
          "circuit breaker open: quarantines in the last " + Minutes(policy_.window_ms) +
              " cover " + std::to_string(in_window_) + " GPU(s), the limit is " +
              std::to_string(out_.breaker_limit) + " (" + std::to_string(policy_.breaker_percent) +
              "% of the cluster's GPUs, at least one node's); " + DescribeXid(x.xid) + " on " +
              Gpu(x.gpu) + " of node " + n.node +
              " is not acted on. Look for a cause shared by many GPUs (a driver rollout, power, "
              "cooling) before quarantining more by hand (tessera cordon " +
              n.node + " --gpu " + std::to_string(x.gpu) + ")");
    return true;
  }

  void Act(const NodeHealthReport& n, NodeQuarantine* st) {
    std::vector<XidSeenAt> fresh;
    for (const XidSeenAt& x : n.xids) {
      if (x.at_ms > st->handled_until_ms) fresh.push_back(x);
    }
    std::stable_sort(fresh.begin(), fresh.end(),
                     [](const XidSeenAt& a, const XidSeenAt& b) { return a.at_ms < b.at_ms; });
    for (const XidSeenAt& x : fresh) {
      st->handled_until_ms = std::max(st->handled_until_ms, x.at_ms);
      const XidAction action = LookupXid(x.xid).action;
      if (!policy_.enabled || !TakesGpuOutOfService(action) || st->reboot) continue;
      if (action == XidAction::kRestartBareMetal) {
        const int64_t cost = n.gpu_count - InWindow(*st, n.gpu_count);
        if (Breaker(n, x, cost)) continue;
        st->reboot = RebootMark{x.xid, now_, n.boot_id};
        in_window_ += cost;
        Event(n.node, true, "NodeRebootRequired",
              "node " + n.node + " must be rebooted: " + DescribeXid(x.xid) + " on " + Gpu(x.gpu) +
                  ". It takes no work and its jobs are scheduled again elsewhere, gangs whole; "
                  "reboot it when they have moved (the mark lifts when its agent reports the "
                  "new boot)");
        continue;
      }
      const bool held = std::any_of(st->gpus.begin(), st->gpus.end(),
                                    [&](const QuarantinedGpu& q) { return q.gpu == x.gpu; });
      if (held || Breaker(n, x, 1)) continue;
      const bool reset = action != XidAction::kWorkflow;
      st->gpus.push_back({x.gpu, x.xid, now_, reset});
      std::sort(st->gpus.begin(), st->gpus.end(),
                [](const QuarantinedGpu& a, const QuarantinedGpu& b) { return a.gpu < b.gpu; });
      ++in_window_;
      const std::string i = std::to_string(x.gpu);
      Event(n.node, true, "GpuQuarantined",
            Gpu(x.gpu) + " of node " + n.node + " quarantined: " + DescribeXid(x.xid) +
                ". Its jobs are scheduled again elsewhere, gangs whole. " +
                (reset ? "A reset is requested: the node's agent carries it out when started "
                         "with --allow-gpu-reset; otherwise run nvidia-smi --gpu-reset -i " +
                             i + " on " + n.node + " once the GPU is idle, then tessera uncordon " +
                             n.node + " --gpu " + i
                       : "A diagnosis decides: run dcgmi diag -r 2 -i " + i + " on " + n.node +
                             "; when it passes, tessera uncordon " + n.node + " --gpu " + i));
    }
  }

  const std::vector<NodeHealthReport>& nodes_;
  const QuarantinePolicy& policy_;
  const int64_t now_;
  int64_t in_window_ = 0;
  QuarantineOutcome out_;
};

}  // namespace

int64_t BreakerLimit(int64_t total_gpus, int64_t largest_node, int64_t percent) {
  return std::max<int64_t>({1, largest_node, total_gpus * percent / 100});
}

QuarantineOutcome DecideQuarantine(const std::vector<NodeHealthReport>& nodes,
                                   const QuarantinePolicy& policy, int64_t now_ms) {
  return Deciding(nodes, policy, now_ms).Run();
}

}  // namespace tessera::core
