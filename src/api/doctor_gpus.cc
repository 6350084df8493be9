// The doctor's node and GPU checks (api/doctor.h): one Node object as its agent reports it.
// Thresholds and fixes follow NVIDIA's documents: the Xid catalog (core/xid.h), Dynamic Page
// Retirement (a page retires at one double-bit or two single-bit errors; a card retires at most
// 64; pending retirements take effect at the next driver reload or GPU reset), Row Remapping
// (Ampere and later: pending remaps need a GPU reset; a remap failure meets the RMA criteria),
// and nvidia-smi's notes on PCIe (the link generation drops while a card idles to save power;
// its width does not).
#include <algorithm>
#include <map>
#include <set>

#include "api/doctor.h"
#include "api/gpu_checkup.h"
#include "api/gpu_quarantine.h"
#include "api/kinds.h"
#include "api/time.h"
#include "core/xid.h"

namespace tessera::api {

using nlohmann::json;

namespace {

constexpr int64_t kStaleHeartbeatMs = 2 * 60'000;
constexpr int64_t kRecentXidMs = 24 * 3'600'000;
constexpr int64_t kRetiredPagesLimit = 64;
constexpr int64_t kRetiredPagesNearLimit = 60;
// A card this busy whose PCIe link runs below its generation is slowed by the link, not idle.
constexpr int64_t kBusyUtilizationPct = 50;

struct GpuRef {
  std::string subject;  // node/<n>/gpu/<i>
  std::string label;    // "GPU 3 (GPU-abc…)"
};

class NodeChecks {
 public:
  NodeChecks(const json& node, int64_t now_ms) : node_(node), now_ms_(now_ms) {
    name_ = node.value("metadata", json::object()).value("name", "");
    const json& status = node.contains("status") ? node["status"] : kEmpty;
    gpus_ = status.value("gpus", json::array());
    telemetry_ = status.value("telemetry", json::array());
    if (auto c = DecodeCheckups(status.contains("checkups") ? &status["checkups"] : nullptr);
        c.ok()) {
      checkups_ = std::move(c).value();
    }
    if (auto x = DecodeXids(status.contains("xids") ? &status["xids"] : nullptr); x.ok()) {
      xids_ = std::move(x).value();
    }
    heartbeat_ = status.value("heartbeat", "");
  }

  std::vector<Finding> Run() {
    Heartbeat();
    GpuCount();
    Vbios();
    Quarantine();
    Health();
    for (const json& t : telemetry_) Telemetry(t);
    for (const GpuCheckupView& c : checkups_) Checkup(c);
    Xids();
    return std::move(out_);
  }

 private:
  static inline const json kEmpty = json::object();

  GpuRef Gpu(int64_t index) const {
    GpuRef r{"node/" + name_ + "/gpu/" + std::to_string(index), "GPU " + std::to_string(index)};
    for (const json& g : gpus_) {
      if (g.value("index", -1) == index && g.contains("uuid")) {
        r.label += " (" + g.value("uuid", "") + ")";
      }
    }
    return r;
  }
  std::string NodeSubject() const { return "node/" + name_; }

  Finding& Add(Severity s, std::string check, std::string subject, std::string summary) {
    out_.push_back(MakeFinding(s, std::move(check), std::move(subject), std::move(summary)));
    return out_.back();
  }

  const json* TelemetryOf(int64_t index) const {
    for (const json& t : telemetry_) {
      if (t.value("index", -1) == index) return &t;
    }
    return nullptr;
  }

  void Heartbeat() {
    const int64_t at = heartbeat_.empty() ? -1 : ParseTime(heartbeat_);
    if (at < 0) {
      Finding& f = Add(Severity::kCritical, "node.no-heartbeat", NodeSubject(),
                       "the node's agent has never reported");
      f.meaning =
          "No agent runs for this Node, so nothing is placed on it and its GPUs are not "
          "watched.";
      f.fix =
          "Start the agent on the machine: tessera agent --server URL --token-file FILE "
          "(see `tessera agent --help`).";
      return;
    }
    if (now_ms_ - at <= kStaleHeartbeatMs) return;
    Finding& f = Add(Severity::kCritical, "node.heartbeat-stale", NodeSubject(),
                     "the node's agent stopped reporting");
    f.evidence.push_back("last heartbeat " + heartbeat_ + ", " +
                         std::to_string((now_ms_ - at) / 1000) + " s ago");
    f.meaning =
        "The agent is down or cannot reach the server: its tasks are not watched, and "
        "after the node's fence they are given up and requeued.";
    f.fix =
        "On the node: check the agent's process and its log (journalctl -u tessera-agent), "
        "and that it reaches the server's address.";
  }

  void GpuCount() {
    const json labels = node_.value("metadata", json::object()).value("labels", json::object());
    const std::string expected = labels.value("tessera.io/expected-gpus", "");
    if (expected.empty()) return;
    int64_t want = 0;
    try {
      want = std::stoll(expected);
    } catch (...) {
      return;
    }
    const auto have = static_cast<int64_t>(gpus_.size());
    if (have >= want) return;
    Finding& f = Add(Severity::kCritical, "node.gpu-missing", NodeSubject(),
                     std::to_string(want - have) + " GPU(s) not visible");
    f.evidence.push_back("label tessera.io/expected-gpus=" + expected + ", the agent sees " +
                         std::to_string(have));
    f.meaning =
        "A GPU the machine should have is not visible to the driver: it fell off the bus "
        "(Xid 79), is not seated, or its driver did not load it.";
    f.fix =
        "On the node: nvidia-smi -L and lspci | grep -i nvidia; dmesg | grep -i -e NVRM -e "
        "xid. A GPU lspci lists but nvidia-smi does not needs a reboot; one lspci does not "
        "list needs the hardware checked (reseat, power).";
  }

  void Vbios() {
    std::map<std::string, std::map<std::string, std::vector<int64_t>>> by_model;
    for (const GpuCheckupView& c : checkups_) {
      if (c.vbios.empty()) continue;
      std::string model;
      for (const json& g : gpus_) {
        if (g.value("index", -1) == c.index) model = g.value("model", "");
      }
      by_model[model][c.vbios].push_back(c.index);
    }
    for (const auto& [model, versions] : by_model) {
      if (versions.size() < 2) continue;
      Finding& f = Add(Severity::kWarning, "node.vbios-mismatch", NodeSubject(),
                       "GPUs of one model run different VBIOS versions");
      for (const auto& [v, gpus] : versions) {
        std::string list;
        for (int64_t g : gpus) list += (list.empty() ? "" : ",") + std::to_string(g);
        f.evidence.push_back((model.empty() ? "" : model + " ") + "VBIOS " + v + ": GPU " + list);
      }
      f.meaning =
          "Cards of one model should run one VBIOS; a mix points at a card replaced or "
          "flashed apart from the others, and can differ in clocks and behaviour.";
      f.fix =
          "nvidia-smi -q | grep -i vbios; bring the cards to one version with the vendor's "
          "firmware tool, in a maintenance window.";
    }
  }

  // What the scheduling loop did for the node's Xids (api/gpu_quarantine.h).
  void Quarantine() {
    auto q = QuarantineOf(node_);
    if (!q.ok()) return;
    if (q->reboot) {
      Finding& f = Add(Severity::kCritical, "node.reboot-required", NodeSubject(),
                       "the node is marked for reboot and drained");
      f.evidence.push_back(core::DescribeXid(q->reboot->xid) + ", marked at " +
                           FormatTime(q->reboot->since_ms));
      f.meaning =
          "NVIDIA's catalog says the node must be rebooted; it takes no work and its "
          "jobs were moved. The mark lifts when its agent reports a new boot.";
      f.fix =
          "Reboot the node once its jobs have moved; or, to keep it in service without a "
          "reboot, tessera uncordon " +
          name_ + ".";
    }
    for (const core::QuarantinedGpu& g : q->gpus) {
      const GpuRef ref = Gpu(g.gpu);
      const std::string i = std::to_string(g.gpu);
      Finding& f = Add(Severity::kCritical, "gpu.quarantined", ref.subject,
                       ref.label + " is quarantined for an Xid");
      f.evidence.push_back(core::DescribeXid(g.xid) + ", quarantined at " + FormatTime(g.since_ms));
      f.evidence.push_back(g.reset_requested ? "a reset is requested" : "no reset requested");
      f.meaning =
          "It takes no work, and the jobs that ran on it were scheduled again. It comes "
          "back after a reset once it passes its checks, or when an admin uncordons it.";
      f.fix = g.reset_requested
                  ? "With the agent's --allow-gpu-reset it resets the GPU when idle; otherwise "
                    "on the node: nvidia-smi --gpu-reset -i " +
                        i + ", then tessera uncordon " + name_ + " --gpu " + i + "."
                  : "On the node: dcgmi diag -r 2 -i " + i + "; when it passes, tessera uncordon " +
                        name_ + " --gpu " + i + ".";
    }
  }

  void Health() {
    const std::vector<std::string> cordoned = CordonedGpus(node_);
    for (const json& g : gpus_) {
      const int64_t index = g.value("index", -1);
      const GpuRef ref = Gpu(index);
      bool by_hand = false;
      for (const std::string& c : cordoned) {
        by_hand = by_hand || NamesGpu(c, g.value("uuid", ""), index);
      }
      if (by_hand) {
        Finding& f = Add(Severity::kInfo, "gpu.cordoned", ref.subject,
                         ref.label + " is cordoned by hand and takes no new work");
        f.evidence.push_back(
            "annotation tessera.io/cordoned-gpus=" +
            node_["metadata"]["annotations"].value("tessera.io/cordoned-gpus", ""));
        f.fix = "When it is fixed: tessera uncordon " + name_ + " --gpu " + std::to_string(index);
      }
      if (g.value("health", "Healthy") == "Unhealthy") {
        Finding& f = Add(Severity::kCritical, "gpu.unhealthy", ref.subject,
                         ref.label + " is out of service (unhealthy)");
        f.meaning =
            "Its agent saw an Xid that takes a GPU out of service or a new uncorrectable "
            "ECC error; the scheduler places nothing on it until it has been quiet for "
            "a while.";
        f.fix =
            "See its Xid and ECC findings; tessera get events -n tessera-system shows when "
            "and why.";
      }
    }
  }

  void Telemetry(const json& t) {
    const int64_t index = t.value("index", -1);
    const GpuRef ref = Gpu(index);
    if (const int64_t dbe = t.value("eccUncorrected", int64_t{0}); dbe > 0) {
      Finding& f = Add(Severity::kCritical, "gpu.ecc-uncorrected", ref.subject,
                       ref.label + " has uncorrectable (double-bit) ECC errors");
      f.evidence.push_back("volatile uncorrected ECC errors: " + std::to_string(dbe) +
                           " since the driver loaded");
      f.meaning =
          "Memory returned data it could not correct: the work on this GPU may have read "
          "corrupt data, and NVIDIA's driver stops new contexts until the page is retired "
          "or the row remapped.";
      f.fix = "nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER -i " + std::to_string(index) +
              "; drain the GPU (tessera cordon " + name_ + " --gpu " + std::to_string(index) +
              ") and reset it when idle (nvidia-smi -r -i " + std::to_string(index) +
              "). If errors come back after the reset, the card needs service.";
    }
    std::vector<std::string> strays;
    for (const json& p : t.value("processes", json::array())) {
      if (p.contains("pod")) continue;
      strays.push_back("PID " + std::to_string(p.value("pid", 0)) + " uses " +
                       std::to_string(p.value("usedMiB", 0)) + " MiB");
    }
    if (!strays.empty()) {
      Finding& f = Add(Severity::kWarning, "gpu.stray-process", ref.subject,
                       ref.label + " runs processes that no Tessera task holds");
      f.evidence = strays;
      f.meaning =
          "Work started outside Tessera (or left behind by a task that ended) uses this "
          "card's memory and time; the scheduler counts the card as free, so the tasks it "
          "places there can run out of memory or slow down.";
      f.fix =
          "On the node: nvidia-smi --query-compute-apps=pid,process_name,used_memory "
          "--format=csv and ps -o pid,user,cmd -p PID; stop the process, or run it as a "
          "Tessera Job.";
    }
  }

  void Checkup(const GpuCheckupView& c) {
    const GpuRef ref = Gpu(c.index);
    const std::string i = std::to_string(c.index);
    const int64_t retired = c.retired_sbe.value_or(0) + c.retired_dbe.value_or(0);
    if (retired > 0 || c.retire_pending) {
      const bool severe = c.retire_pending || retired >= kRetiredPagesNearLimit;
      Finding& f = Add(severe ? Severity::kCritical : Severity::kWarning, "gpu.retired-pages",
                       ref.subject, ref.label + " has retired memory pages");
      f.evidence.push_back("retired pages: " + std::to_string(c.retired_sbe.value_or(0)) +
                           " for single-bit errors, " + std::to_string(c.retired_dbe.value_or(0)) +
                           " for double-bit errors (a card retires at most " +
                           std::to_string(kRetiredPagesLimit) + ")");
      if (c.retire_pending) f.evidence.push_back("a retirement is pending");
      f.meaning =
          c.retire_pending
              ? "A page was retired but is still in use until the driver reloads or the "
                "GPU resets: work there can hit the bad memory again."
              : "The driver retires a page after one double-bit or two single-bit errors at "
                "one address; many retirements mean the memory is wearing out.";
      f.fix = c.retire_pending ? "Drain the GPU and reset it (nvidia-smi -r -i " + i +
                                     ") or reload the driver, so that the retirement takes effect."
                               : "Watch the count (nvidia-smi -q -d PAGE_RETIREMENT -i " + i +
                                     "); near " + std::to_string(kRetiredPagesLimit) +
                                     ", run NVIDIA's field diagnostic for an RMA.";
    }
    if (c.remap_failed) {
      Finding& f = Add(Severity::kCritical, "gpu.row-remap-failed", ref.subject,
                       ref.label + " could not remap a failing memory row");
      f.evidence.push_back("row remapping failure flag set; uncorrectable rows remapped: " +
                           std::to_string(c.remapped_uncorrectable.value_or(0)));
      f.meaning =
          "The card ran out of spare rows for its failing memory: NVIDIA's RMA criteria "
          "are met once its field diagnostic confirms it.";
      f.fix = "Take the GPU out of service (tessera cordon " + name_ + " --gpu " + i +
              ") and run NVIDIA's field diagnostic for an RMA.";
    } else if (c.remap_pending) {
      Finding& f = Add(Severity::kWarning, "gpu.row-remap-pending", ref.subject,
                       ref.label + " has a memory row remap waiting for a GPU reset");
      f.evidence.push_back("remapped rows: " + std::to_string(c.remapped_correctable.value_or(0)) +
                           " correctable, " + std::to_string(c.remapped_uncorrectable.value_or(0)) +
                           " uncorrectable; pending: yes");
      f.meaning = "A failing row was found; the spare row replaces it only after a GPU reset.";
      f.fix = "Drain the GPU and reset it when idle: nvidia-smi -r -i " + i + ".";
    }
    Links(c, ref);
    Pcie(c, ref);
    Throttle(c, ref);
  }

  void Links(const GpuCheckupView& c, const GpuRef& ref) {
    if (!c.nvlinks_down.empty()) {
      std::string list;
      for (int64_t l : c.nvlinks_down) list += (list.empty() ? "" : ",") + std::to_string(l);
      Finding& f = Add(Severity::kCritical, "gpu.nvlink-down", ref.subject,
                       ref.label + ": " + std::to_string(c.nvlinks_down.size()) + " of " +
                           std::to_string(c.nvlinks) + " NVLink links are down");
      f.evidence.push_back("links down: " + list);
      f.meaning =
          "Traffic between GPUs takes fewer links or falls back to PCIe: collective "
          "operations (NCCL all-reduce) and so training across these GPUs slow down.";
      f.fix = "nvidia-smi nvlink -s -i " + std::to_string(c.index) +
              " and nvidia-smi topo -m; a link that stays down after a GPU reset needs the "
              "baseboard or NVSwitch checked.";
    }
    if (c.nvlink_errors.value_or(0) > 0) {
      Finding& f = Add(Severity::kWarning, "gpu.nvlink-errors", ref.subject,
                       ref.label + " counts NVLink errors");
      f.evidence.push_back("replay, recovery and CRC errors on its links: " +
                           std::to_string(*c.nvlink_errors) + " since the driver loaded");
      f.meaning =
          "Links that replay or recover lose bandwidth; a count that keeps rising marks a "
          "failing link.";
      f.fix = "nvidia-smi nvlink -e -i " + std::to_string(c.index) +
              " twice, minutes apart: a rising count needs the link checked.";
    }
  }

  void Pcie(const GpuCheckupView& c, const GpuRef& ref) {
    const json* t = TelemetryOf(c.index);
    const int64_t util = t ? t->value("utilizationPct", int64_t{0}) : 0;
    const bool narrow = c.pcie_width && c.pcie_width_max && *c.pcie_width < *c.pcie_width_max;
    const bool slow_busy = c.pcie_gen && c.pcie_gen_max && *c.pcie_gen < *c.pcie_gen_max &&
                           util >= kBusyUtilizationPct;
    if (!narrow && !slow_busy) return;
    Finding& f = Add(Severity::kWarning, "gpu.pcie-degraded", ref.subject,
                     ref.label + "'s PCIe link runs below the card's maximum");
    f.evidence.push_back("link: Gen" + std::to_string(c.pcie_gen.value_or(0)) + " x" +
                         std::to_string(c.pcie_width.value_or(0)) + ", maximum Gen" +
                         std::to_string(c.pcie_gen_max.value_or(0)) + " x" +
                         std::to_string(c.pcie_width_max.value_or(0)) + "; utilisation " +
                         std::to_string(util) + "%");
    f.meaning =
        "Host-to-GPU copies (loading data, checkpoints) and PCIe traffic between GPUs "
        "slow down in proportion. A narrower link is a seating, riser or slot fault; a "
        "lower generation while busy is a link that trained down.";
    f.fix = "nvidia-smi -q -d PCIE -i " + std::to_string(c.index) +
            " and lspci -vv (LnkSta against LnkCap); reseat the card or move it to another "
            "slot; check the BIOS's PCIe settings.";
  }

  void Throttle(const GpuCheckupView& c, const GpuRef& ref) {
    static const std::map<std::string, std::pair<Severity, const char*>> kReasons = {
        {"HwSlowdown",
         {Severity::kCritical,
          "the hardware slowed the clocks (overheating, or the power supply "
          "signalled a fault)"}},
        {"HwThermalSlowdown", {Severity::kCritical, "the card is too hot"}},
        {"HwPowerBrakeSlowdown",
         {Severity::kCritical, "the system's power brake is asserted (power supply or chassis)"}},
        {"SwThermalSlowdown",
         {Severity::kWarning, "the driver holds the clocks down to keep the card cool"}},
        {"SwPowerCap", {Severity::kInfo, "the card runs at its power limit"}},
        {"SyncBoost", {Severity::kInfo, "the clocks are held to match other GPUs (sync boost)"}},
    };
    Severity worst = Severity::kInfo;
    std::vector<std::string> why;
    for (const std::string& r : c.throttle) {
      auto it = kReasons.find(r);
      if (it == kReasons.end()) continue;
      worst = std::max(worst, it->second.first);
      why.push_back(r + ": " + it->second.second);
    }
    if (why.empty()) return;
    Finding& f = Add(worst, "gpu.throttled", ref.subject, ref.label + "'s clocks are throttled");
    f.evidence = why;
    if (const json* t = TelemetryOf(c.index)) {
      f.evidence.push_back("temperature " + std::to_string(t->value("temperatureC", 0)) +
                           " C, power " + std::to_string(t->value("powerMw", 0) / 1000) +
                           " W, SM clock " + std::to_string(t->value("smClockMhz", 0)) + " MHz");
    }
    f.meaning =
        "Work on this GPU runs slower than the card can; in a gang, every member waits "
        "for the slowest.";
    f.fix = worst == Severity::kInfo
                ? "Nothing wrong; nvidia-smi -q -d PERFORMANCE,POWER shows the limit."
                : "nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i " + std::to_string(c.index) +
                      "; check the airflow, fans and inlet temperature, and the power supplies.";
  }

  void Xids() {
    // Per GPU and Xid: how many, the last time.
    std::map<std::pair<int64_t, int64_t>, std::pair<int, std::string>> recent;
    for (const XidSeen& x : xids_) {
      const int64_t at = ParseTime(x.time);
      if (at < 0 || now_ms_ - at > kRecentXidMs) continue;
      auto& [count, last] = recent[{x.gpu, x.xid}];
      ++count;
      last = std::max(last, x.time);
    }
    for (const auto& [key, seen] : recent) {
      const auto [gpu, xid] = key;
      const core::XidInfo info = core::LookupXid(static_cast<uint64_t>(xid));
      const GpuRef ref = Gpu(gpu);
      Severity s = Severity::kCritical;
      if (info.action == core::XidAction::kIgnore) s = Severity::kInfo;
      if (info.action == core::XidAction::kRestartApp) s = Severity::kWarning;
      Finding& f = Add(s, "gpu.xid", ref.subject,
                       ref.label + ": " + core::DescribeXid(static_cast<uint64_t>(xid)));
      const int64_t ago = (now_ms_ - ParseTime(seen.second)) / 1000;
      f.evidence.push_back(std::to_string(seen.first) + " time(s) in the last 24 h, the last at " +
                           seen.second + " (" + std::to_string(ago) + " s ago)");
      f.meaning = XidMeaning(info.action);
      f.fix = XidFix(info.action, gpu);
    }
  }

  static std::string XidMeaning(core::XidAction a) {
    switch (a) {
      case core::XidAction::kIgnore:
        return "NVIDIA's catalog: nothing to do.";
      case core::XidAction::kRestartApp:
        return "NVIDIA's catalog: the application's fault, or contained to it: the GPU stays in "
               "service; the application must restart.";
      case core::XidAction::kResetGpu:
        return "NVIDIA's catalog: the GPU must be reset before it takes work again.";
      case core::XidAction::kRestartBareMetal:
        return "NVIDIA's catalog: the node must be rebooted.";
      case core::XidAction::kWorkflow:
        return "NVIDIA's catalog: a diagnosis decides (the GPU is kept out of service meanwhile).";
      case core::XidAction::kUnknown:
        break;
    }
    return "Not in NVIDIA's catalog as Tessera knows it: treated as needing a GPU reset.";
  }

  std::string XidFix(core::XidAction a, int64_t gpu) const {
    const std::string i = std::to_string(gpu);
    switch (a) {
      case core::XidAction::kIgnore:
        return "None.";
      case core::XidAction::kRestartApp:
        return "Check the failing task's log (tessera logs); a program bug (Xid 13, 31: illegal "
               "address) follows the program, not the GPU.";
      case core::XidAction::kRestartBareMetal:
        return "Drain the node (tessera cordon " + name_ +
               ") and reboot it; if the GPU does not "
               "come back, check its seating and power.";
      default:
        break;
    }
    return "Drain the GPU (tessera cordon " + name_ + " --gpu " + i +
           "), reset it when idle (nvidia-smi -r -i " + i +
           "), and run dcgmi diag -r 2 before it takes work again; dmesg | grep -i xid shows "
           "the driver's report.";
  }

  const json& node_;
  const int64_t now_ms_;
  std::string name_, heartbeat_;
  json gpus_, telemetry_;
  std::vector<GpuCheckupView> checkups_;
  std::vector<XidSeen> xids_;
  std::vector<Finding> out_;
};

}  // namespace

std::vector<Finding> CheckNode(const json& node, int64_t now_ms) {
  return NodeChecks(node, now_ms).Run();
}

Finding NvmlStartFinding(const std::string& node, const std::string& error) {
  Finding f = MakeFinding(Severity::kCritical, "", "node/" + node, "");
  f.evidence.push_back(error);
  if (error.find("version mismatch") != std::string::npos) {
    f.check = "node.driver-mismatch";
    f.summary = "NVML and the loaded kernel driver are of different versions";
    f.meaning =
        "The driver was upgraded while the old kernel module stayed loaded: nvidia-smi, "
        "CUDA and the agent cannot start on any GPU of this node (\"Failed to initialize "
        "NVML: Driver/library version mismatch\").";
    f.fix =
        "Compare cat /proc/driver/nvidia/version with the installed package's version; "
        "drain the node (tessera cordon " +
        node +
        ") and reboot it, or unload and reload "
        "the nvidia kernel modules once no process uses them.";
  } else {
    f.check = "node.nvml-unavailable";
    f.summary = "NVML cannot start on this node";
    f.meaning =
        "Without NVML no GPU of this node is visible: the driver is not installed or "
        "not loaded, or the library cannot be found.";
    f.fix =
        "nvidia-smi; lsmod | grep nvidia; dmesg | grep -i nvrm. Install or load the NVIDIA "
        "driver, or point --nvml-library at libnvidia-ml.so.1.";
  }
  return f;
}

}  // namespace tessera::api
