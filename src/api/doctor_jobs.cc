// The doctor's checks of one Job (api/doctor.h): why it waits, where it stands in its queue and
// whether it can ever fit; CUDA out-of-memory errors in its tasks' logs, tied to the memory its
// devices give it; and the GPUs it holds, idle or slowed.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "api/doctor.h"
#include "api/gpu_checkup.h"
#include "api/kinds.h"
#include "api/kinds_common.h"
#include "api/time.h"

namespace tessera::api {

using kinds_detail::MetaString;
using nlohmann::json;

namespace {

// Below this utilisation a GPU a running task holds counts as idle.
constexpr int64_t kIdleUtilizationPct = 10;

// What CUDA and the frameworks print when an allocation fails.
constexpr const char* kOomMarks[] = {"CUDA out of memory", "CUDA_ERROR_OUT_OF_MEMORY",
                                     "cudaErrorMemoryAllocation", "CUBLAS_STATUS_ALLOC_FAILED",
                                     "OutOfMemoryError"};

std::string QueueOfLocal(const DoctorInput& in, const std::string& ns, const std::string& lq) {
  for (const json& l : in.local_queues) {
    auto spec = DecodeLocalQueue(l);
    if (spec.ok() && spec->namespace_name == ns && spec->name == lq) return spec->queue;
  }
  return "";
}

// The Job's whole GPUs per pod (0 for shares, slices and replicas) and in all.
struct Demand {
  int32_t pods = 0;
  int32_t max_whole_per_pod = 0;
  int64_t total_milli = 0;
  std::vector<std::string> models;
};

Demand DemandOf(const JobSpec& spec) {
  Demand d;
  for (const core::PodSpec& p : core::ExpandPods(spec.workload)) {
    ++d.pods;
    if (p.gpu.kind == core::GpuRequestKind::kWhole) {
      d.max_whole_per_pod = std::max(d.max_whole_per_pod, p.gpu.count);
    }
    d.total_milli += core::NominalGpuMilli(p);
    if (d.models.empty()) d.models = p.gpu_models;
  }
  return d;
}

void NeverFits(const std::string& subject, const JobSpec& spec, const DoctorInput& in,
               std::vector<Finding>* out);

void Pending(const json& job, const JobSpec& spec, const DoctorInput& in,
             std::vector<Finding>* out) {
  const std::string ns = MetaString(job, "namespace"), name = MetaString(job, "name");
  const std::string subject = "job/" + ns + "/" + name;
  const json& status = job.value("status", json::object());
  const std::string queue = QueueOfLocal(in, ns, spec.workload.local_queue);
  Finding f =
      MakeFinding(Severity::kInfo, "job.pending", subject, "waits to be admitted and placed");
  f.evidence.push_back("reason: " + status.value("message", std::string("(none given yet)")));
  f.meaning = "The scheduler admits by queue order, priority and quota, then places the pods.";
  f.fix = "tessera describe job " + name + " -n " + ns + " shows each pod's reason.";
  // Place in line: the scheduler's own (priority, then age), when the server gives it.
  if (auto place = in.places.find(ns + "/" + name); place != in.places.end()) {
    const json& p = place->second;
    if (p.contains("positionInClusterQueue")) {
      f.evidence.push_back("queue " + p.value("queue", std::string()) + ": " +
                           std::to_string(p.value("positionInClusterQueue", int64_t{0})) + " of " +
                           std::to_string(p.value("waitingInClusterQueue", int64_t{0})) +
                           " waiting (the scheduler's order: priority, then age)");
    } else {
      f.evidence.push_back("in no queue's order: " + p.value("reason", std::string()));
    }
    if (p.value("fitsWhenRunningWorkEnds", true) == false) {
      f.evidence.push_back("the scheduler found it would not fit even with all running work ended");
    }
    out->push_back(std::move(f));
    NeverFits(subject, spec, in, out);
    return;
  }
  // Otherwise the pending Jobs bound for the same queue, older first.
  int ahead = 0, waiting = 0;
  const std::string created = job.value("metadata", json::object()).value("creationTimestamp", "");
  for (const json& other : in.jobs) {
    if (other.value("status", json::object()).value("phase", "Pending") != "Pending") continue;
    auto o = DecodeJob(other);
    if (!o.ok()) continue;
    const std::string ons = MetaString(other, "namespace");
    if (QueueOfLocal(in, ons, o->workload.local_queue) != queue) continue;
    ++waiting;
    const std::string oc = other.value("metadata", json::object()).value("creationTimestamp", "");
    const std::string oname = ons + "/" + MetaString(other, "name");
    if (oc < created || (oc == created && oname < ns + "/" + name)) ++ahead;
  }
  f.evidence.push_back(
      queue.empty() ? "no queue: its LocalQueue \"" + spec.workload.local_queue + "\" is not found"
                    : "queue " + queue + ": " + std::to_string(ahead + 1) + " of " +
                          std::to_string(waiting) + " waiting (older first)");
  out->push_back(std::move(f));
  NeverFits(subject, spec, in, out);
}

// Whether it can ever fit: a pod larger than every node, a gang larger than the cluster.
void NeverFits(const std::string& subject, const JobSpec& spec, const DoctorInput& in,
               std::vector<Finding>* out) {
  const Demand d = DemandOf(spec);
  int64_t largest = 0, cluster_gpus = 0;
  std::string largest_node;
  for (const json& n : in.nodes) {
    auto node = DecodeNode(n);
    if (!node.ok()) continue;
    int64_t usable = 0;
    for (const core::GpuDevice& g : node->gpus) {
      if (!d.models.empty() &&
          std::find(d.models.begin(), d.models.end(), g.model) == d.models.end()) {
        continue;
      }
      ++usable;
    }
    cluster_gpus += usable;
    if (usable > largest) {
      largest = usable;
      largest_node = node->name;
    }
  }
  if (d.max_whole_per_pod > largest) {
    Finding n = MakeFinding(Severity::kCritical, "job.never-fits", subject,
                            "a pod asks for more GPUs than any node has");
    n.evidence.push_back("a pod asks for " + std::to_string(d.max_whole_per_pod) +
                         " whole GPU(s); the largest node" +
                         (largest_node.empty() ? "" : " (" + largest_node + ")") + " has " +
                         std::to_string(largest) +
                         (d.models.empty() ? "" : " of the models it allows"));
    n.meaning = "A pod runs on one node: this Job waits for ever as it stands.";
    n.fix =
        "Split the work into more pods with fewer GPUs each (a gang: several pods, one per "
        "node), or add a node with enough GPUs.";
    out->push_back(std::move(n));
  } else if (d.total_milli > cluster_gpus * 1000) {
    Finding n = MakeFinding(Severity::kCritical, "job.never-fits", subject,
                            "the Job asks for more GPUs than the cluster has");
    n.evidence.push_back("it asks for " + std::to_string(d.total_milli / 1000) +
                         " GPU(s) in all; the nodes hold " + std::to_string(cluster_gpus));
    n.meaning = "All of a gang's pods must run at once: this Job waits for ever as it stands.";
    n.fix = "Ask for fewer pods or GPUs, or add nodes.";
    out->push_back(std::move(n));
  }
}

// A pod's GPU memory as its devices give it, in words.
std::string MemoryOf(const json& pod) {
  std::ostringstream s;
  for (const json& d : pod.value("devices", json::array())) {
    if (!d.is_object()) continue;
    const std::string kind = d.value("kind", "");
    s << (s.tellp() > 0 ? "; " : "") << "GPU " << d.value("index", 0) << " ";
    if (kind == "share") {
      s << "share of " << d.value("memoryMiB", 0) << " MiB (" << d.value("milli", 0) / 10.0
        << "% of its compute)";
    } else if (kind == "mig") {
      s << "MIG slice " << d.value("migProfile", std::string("?"));
    } else if (kind == "replica") {
      s << "time-slice replica (the card's memory shared with " << d.value("replicas", 0) - 1
        << " others, unenforced)";
    } else {
      s << "whole card";
    }
  }
  return s.str();
}

void OutOfMemory(const json& job, const DoctorInput& in, std::vector<Finding>* out) {
  const std::string ns = MetaString(job, "namespace"), name = MetaString(job, "name");
  const json listed = job.value("status", json::object()).value("pods", json::array());
  std::map<std::string, const json*> pods;
  for (const json& p : listed) {
    if (p.is_object()) pods[p.value("name", "")] = &p;
  }
  const std::string prefix = ns + "/" + name + "/";
  for (const auto& [key, log] : in.logs) {
    if (!key.starts_with(prefix)) continue;
    const std::string pod = key.substr(prefix.size());
    std::istringstream lines(log);
    std::string hit;
    for (std::string line; std::getline(lines, line);) {
      for (const char* mark : kOomMarks) {
        if (line.find(mark) != std::string::npos) hit = line;
      }
    }
    if (hit.empty()) continue;
    Finding f = MakeFinding(Severity::kWarning, "job.cuda-oom", "job/" + ns + "/" + name,
                            "pod " + pod + " ran out of GPU memory");
    f.evidence.push_back("log: " + hit.substr(0, 300));
    auto p = pods.find(pod);
    const std::string memory = p == pods.end() ? "" : MemoryOf(*p->second);
    if (!memory.empty()) f.evidence.push_back("its devices: " + memory);
    const bool share = memory.find("share of") != std::string::npos;
    f.meaning = share ? "The task asked for more memory than its share: Tessera enforces a "
                        "share's memory on the card, so an allocation beyond it fails."
                      : "The task's model, batch or activations need more memory than the card "
                        "has free.";
    f.fix = share ? "Raise the share's memory (tessera.io/gpu-memory) or lower the batch size."
                  : "Lower the batch size, use gradient checkpointing or mixed precision, or ask "
                    "for a card with more memory (gpuModels); check stray processes on the card "
                    "(tessera doctor node).";
    out->push_back(std::move(f));
  }
}

// A PCIe lane's rate one way by link generation (GB/s, after encoding), generations 1 to 6.
constexpr double kPcieLaneGBps[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
// NVLink's rate both ways summed per card (GB/s), by model: NVIDIA's figures.
constexpr std::pair<const char*, double> kNvlinkGBps[] = {
    {"V100", 300}, {"A100", 600}, {"A800", 400},   {"H100", 900},
    {"H800", 400}, {"H200", 900}, {"GB200", 1800}, {"B200", 1800}};
// A link this busy bounds the work; a GPU below this utilisation waits for it.
constexpr double kBusyLink = 0.7;
constexpr int64_t kStarvedUtilizationPct = 60;

double NvlinkGBps(const std::string& model) {
  for (const auto& [prefix, gbps] : kNvlinkGBps) {
    if (model.starts_with(prefix)) return gbps;
  }
  return 0;
}

std::string Rate(double kib_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB/s", kib_per_s * 1024 / 1e9);
  return buf;
}

// One device a running pod holds, by its node's telemetry: idle, or starved by a link that runs
// near the card's figure (PCIe: the link's generation and width; NVLink: the model's).
void GpuUse(const std::string& subject, const json& pod, const json& d, const json& node,
            std::vector<Finding>* out) {
  if (d.value("kind", "") != "whole") return;
  const int64_t index = d.value("index", int64_t{-1});
  const std::string name = MetaString(node, "name");
  const json status = node.value("status", json::object());
  const std::string where = "GPU " + std::to_string(index) + " on " + name;
  for (const json& t : status.value("telemetry", json::array())) {
    if (t.value("index", -1) != index) continue;
    const int64_t util = t.value("utilizationPct", int64_t{0});
    if (util < kIdleUtilizationPct) {
      Finding f =
          MakeFinding(Severity::kWarning, "job.gpu-idle", subject,
                      "pod " + pod.value("name", "") + " holds " + where + " and barely uses it");
      f.evidence.push_back("utilisation " + std::to_string(util) + "%, memory used " +
                           std::to_string(t.value("memoryUsedMiB", 0)) + " MiB");
      f.meaning =
          "The task waits on something else (data loading, the network, a peer in its "
          "gang) or is stuck; the card is held and idle.";
      f.fix =
          "tessera logs; check the input pipeline (CPU, storage) and the gang's other pods. "
          "A share (tessera.io/gpu-milli) may fit the task better than a whole card.";
      out->push_back(std::move(f));
      continue;
    }
    if (util >= kStarvedUtilizationPct) continue;
    // PCIe against the link's own rate.
    int64_t gen = 0, width = 0;
    if (auto c = DecodeCheckups(status.contains("checkups") ? &status["checkups"] : nullptr);
        c.ok()) {
      for (const GpuCheckupView& v : *c) {
        if (v.index == index) {
          gen = v.pcie_gen.value_or(0);
          width = v.pcie_width.value_or(0);
        }
      }
    }
    const double pcie = std::max(t.value("pcieTxKiBps", 0.0), t.value("pcieRxKiBps", 0.0));
    if (gen >= 1 && gen <= 6 && width > 0 && pcie > 0) {
      const double capacity = kPcieLaneGBps[gen] * static_cast<double>(width) * 1e9 / 1024;
      if (pcie >= kBusyLink * capacity) {
        Finding f = MakeFinding(Severity::kWarning, "job.pcie-bound", subject,
                                "pod " + pod.value("name", "") + " waits on PCIe on " + where);
        f.evidence.push_back("utilisation " + std::to_string(util) + "%; PCIe " + Rate(pcie) +
                             " of the link's " + Rate(capacity) + " (Gen" + std::to_string(gen) +
                             " x" + std::to_string(width) + ")");
        f.meaning =
            "Copies between host and GPU fill the link and the GPU waits for them: the "
            "input pipeline, or offloading, outruns PCIe.";
        f.fix =
            "Keep data on the GPU (pinned memory, larger batches per copy, GPU-side "
            "augmentation); check the link runs at the card's maximum (gpu.pcie-degraded).";
        out->push_back(std::move(f));
      }
    }
    // NVLink against the card's figure.
    std::string model;
    for (const json& g : status.value("gpus", json::array())) {
      if (g.value("index", -1) == index) model = g.value("model", "");
    }
    const double nvlink = t.value("nvlinkKiBps", 0.0);
    const double figure = NvlinkGBps(model) * 1e9 / 1024;
    if (figure > 0 && nvlink >= kBusyLink * figure) {
      Finding f = MakeFinding(Severity::kWarning, "job.nvlink-bound", subject,
                              "pod " + pod.value("name", "") + " waits on NVLink on " + where);
      f.evidence.push_back("utilisation " + std::to_string(util) + "%; NVLink " + Rate(nvlink) +
                           " of the " + model + "'s " + Rate(figure));
      f.meaning =
          "Collective communication (all-reduce, all-gather) fills the links and the "
          "GPU waits for it: the job is bound by communication, not compute.";
      f.fix =
          "Overlap communication with compute (bucketed all-reduce), use larger micro-batches "
          "or gradient accumulation, or shard differently (fewer GPUs per replica).";
      out->push_back(std::move(f));
    }
  }
}

// The GPUs a running Job holds, from their nodes' telemetry: idle or starved ones (GpuUse), and the
// node findings (NVLink, PCIe, throttling, Xids) about them.
void HeldGpus(const json& job, const DoctorInput& in, std::vector<Finding>* out) {
  const std::string subject = "job/" + MetaString(job, "namespace") + "/" + MetaString(job, "name");
  std::map<std::string, const json*> nodes;
  for (const json& n : in.nodes) nodes[MetaString(n, "name")] = &n;
  std::map<std::string, std::vector<Finding>> node_findings;
  for (const json& pod : job.value("status", json::object()).value("pods", json::array())) {
    if (!pod.is_object() || pod.value("state", json::object()).value("phase", "") != "Running") {
      continue;
    }
    const std::string node = pod.value("node", "");
    auto n = nodes.find(node);
    if (n == nodes.end()) continue;
    if (!node_findings.contains(node)) node_findings[node] = CheckNode(*n->second, in.now_ms);
    for (const json& d : pod.value("devices", json::array())) {
      const int64_t index = d.value("index", int64_t{-1});
      const std::string gpu_subject = "node/" + node + "/gpu/" + std::to_string(index);
      GpuUse(subject, pod, d, *n->second, out);
      for (const Finding& nf : node_findings[node]) {
        if (nf.subject != gpu_subject) continue;
        Finding f = nf;
        f.summary = "its GPU: " + nf.summary;
        f.subject = subject;
        out->push_back(std::move(f));
      }
    }
  }
}

}  // namespace

std::vector<Finding> CheckJob(const json& job, const DoctorInput& in) {
  std::vector<Finding> out;
  auto spec = DecodeJob(job);
  if (!spec.ok()) {
    Finding f = MakeFinding(Severity::kCritical, "job.invalid",
                            "job/" + MetaString(job, "namespace") + "/" + MetaString(job, "name"),
                            "the stored Job does not decode");
    f.evidence.push_back(spec.status().message());
    out.push_back(std::move(f));
    return out;
  }
  const std::string phase = job.value("status", json::object()).value("phase", "Pending");
  if (phase == "Pending") Pending(job, *spec, in, &out);
  OutOfMemory(job, in, &out);
  if (phase == "Admitted") HeldGpus(job, in, &out);
  return out;
}

}  // namespace tessera::api
