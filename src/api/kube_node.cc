#include "api/kube_node.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "api/gpu_quarantine.h"
#include "api/json_read.h"
#include "api/object.h"
#include "api/time.h"
#include "core/mig.h"
#include "core/xid.h"

namespace tessera::api {

using nlohmann::json;

namespace {

// The scheduling loop's Xid actions on the node (api/gpu_quarantine.h), as conditions kubectl
// shows: GpuQuarantined (True naming the GPUs and Xids, else False) and RebootRequired.
json QuarantineConditions(const json& node) {
  json out = json::array();
  auto q = QuarantineOf(node);
  if (!q.ok()) return out;
  json gpu = {{"type", "GpuQuarantined"}, {"status", q->gpus.empty() ? "False" : "True"}};
  if (!q->gpus.empty()) {
    std::string which;
    int64_t since = q->gpus.front().since_ms;
    for (const core::QuarantinedGpu& g : q->gpus) {
      which += (which.empty() ? "" : "; ") + std::string("GPU ") + std::to_string(g.gpu) + ": " +
               core::DescribeXid(g.xid);
      since = std::min(since, g.since_ms);
    }
    gpu["reason"] = "XidAction";
    gpu["message"] = which;
    gpu["lastTransitionTime"] = FormatTime(since);
  }
  out.push_back(std::move(gpu));
  if (q->reboot) {
    out.push_back({{"type", "RebootRequired"},
                   {"status", "True"},
                   {"reason", "XidAction"},
                   {"message", core::DescribeXid(q->reboot->xid)},
                   {"lastTransitionTime", FormatTime(q->reboot->since_ms)}});
  }
  return out;
}

}  // namespace

std::map<std::string, int64_t> GpuResources(const core::NodeSpec& node, bool healthy_only) {
  std::map<std::string, int64_t> out = {{"nvidia.com/gpu", 0}};
  const auto add = [&](const std::string& name, int64_t n, bool counts) {
    out[name] += counts ? n : 0;
  };
  for (const core::GpuDevice& g : node.gpus) {
    const bool counts = !healthy_only || g.health == core::GpuHealth::kHealthy;
    switch (g.sharing.mode) {
      case core::SharingMode::kExclusive:
        add("nvidia.com/gpu", 1, counts);
        break;
      case core::SharingMode::kTimeSlice:
        add(g.sharing.rename ? "nvidia.com/gpu.shared" : "nvidia.com/gpu", g.sharing.replicas,
            counts);
        break;
      case core::SharingMode::kMig: {
        const core::MigGeometry* geo = core::FindMigGeometry(g.model);
        for (const core::MigInstance& m : g.sharing.mig) {
          if (geo == nullptr || m.profile >= geo->profiles.size()) continue;
          add("nvidia.com/mig-" + std::string(geo->profiles[m.profile].name), 1, counts);
        }
        break;
      }
      case core::SharingMode::kShared:
        add("tessera.io/gpu-milli", 1000, counts);
        add("aliyun.com/gpu-mem", g.memory_mib / 1024, counts);
        add("aliyun.com/gpu-count", 1, counts);
        add("aliyun.com/gpu-core", 100, counts);
        add("nvidia.com/gpumem", g.memory_mib, counts);
        add("nvidia.com/gpucores", 100, counts);
        break;
    }
  }
  return out;
}

json KubeNode(const json& node, int64_t now_ms, int64_t grace_ms,
              const std::vector<GpuSharingConfigSpec>& sharing) {
  const json& meta = Member(node, "metadata");
  const json& spec = Member(node, "spec");
  const json& status = Member(node, "status");
  const std::string name = Str(meta, "name");
  json labels = Member(meta, "labels").is_object() ? Member(meta, "labels") : json::object();
  labels.emplace("kubernetes.io/hostname", name);
  labels.emplace("kubernetes.io/os", "linux");
  labels.emplace("beta.kubernetes.io/os", "linux");
  json out_meta = {{"name", name}};
  for (const char* k : {"resourceVersion", "creationTimestamp"}) {
    if (Member(meta, k).is_string()) out_meta[k] = Member(meta, k);
  }
  json annotations =
      Member(meta, "annotations").is_object() ? Member(meta, "annotations") : json::object();

  json kspec = json::object();
  if (Member(spec, "unschedulable") == true) kspec["unschedulable"] = true;
  if (Member(spec, "taints").is_array() && !Member(spec, "taints").empty()) {
    kspec["taints"] = Member(spec, "taints");
  }

  json capacity = json::object();
  json allocatable = json::object();
  const json& alloc = Member(status, "allocatable");
  for (const char* r : {"cpu", "memory"}) {
    const json& v = Member(alloc, r);
    if (v.is_string() || v.is_number()) {
      capacity[r] = v.is_string() ? v.get<std::string>() : v.dump();
      allocatable[r] = capacity[r];
    }
  }
  int64_t gpus = 0, healthy = 0;
  std::string model;
  const json& cards = Member(status, "gpus");
  if (cards.is_array()) {
    for (const json& g : cards) {
      ++gpus;
      if (Str(g, "health") != "Unhealthy") ++healthy;
      if (model.empty()) model = Str(g, "model");
    }
    annotations["tessera.io/gpus"] = cards.dump();
  }
  if (const std::string driver = Str(status, "driverVersion"); !driver.empty()) {
    annotations["tessera.io/driver-version"] = driver;
  }
  // The cards' resources as their sharing offers them (every card exclusive when the node
  // cannot be read as a Tessera node).
  if (auto spec = DecodeNode(node); spec.ok()) {
    ApplySharing(sharing, &*spec, nullptr);
    for (const auto& [r, n] : GpuResources(*spec, false)) capacity[r] = std::to_string(n);
    for (const auto& [r, n] : GpuResources(*spec, true)) allocatable[r] = std::to_string(n);
  } else {
    capacity["nvidia.com/gpu"] = std::to_string(gpus);
    allocatable["nvidia.com/gpu"] = std::to_string(healthy);
  }
  capacity["pods"] = "110";
  allocatable["pods"] = "110";
  if (!model.empty()) labels.emplace("nvidia.com/gpu.product", model);
  if (!annotations.empty()) out_meta["annotations"] = std::move(annotations);
  out_meta["labels"] = std::move(labels);

  const std::string beat = Str(status, "heartbeat");
  const int64_t at = beat.empty() ? -1 : ParseTime(beat);
  json ready = {{"type", "Ready"}};
  if (at < 0) {
    ready["status"] = "Unknown";
    ready["reason"] = "NodeStatusNeverUpdated";
    ready["message"] = "the node's agent has not reported yet";
  } else if (grace_ms > 0 && now_ms - at > grace_ms) {
    ready["status"] = "Unknown";
    ready["reason"] = "NodeStatusUnknown";
    ready["message"] = "no heartbeat from the node's agent since " + beat;
  } else {
    ready["status"] = "True";
    ready["reason"] = "AgentReady";
    ready["message"] = "the node's agent is posting heartbeats";
  }
  if (at >= 0) {
    ready["lastHeartbeatTime"] = beat;
    ready["lastTransitionTime"] = beat;
  }
  json conditions = json::array({std::move(ready)});
  for (json& c : QuarantineConditions(node)) conditions.push_back(std::move(c));
  json info = {{"machineID", ""},
               {"systemUUID", ""},
               {"bootID", Str(status, "bootId")},
               {"kernelVersion", ""},
               {"osImage", ""},
               {"containerRuntimeVersion", ""},
               {"kubeletVersion", "tessera-agent"},
               {"kubeProxyVersion", ""},
               {"operatingSystem", "linux"},
               {"architecture", "amd64"}};
  json kstatus = {{"capacity", std::move(capacity)},
                  {"allocatable", std::move(allocatable)},
                  {"conditions", std::move(conditions)},
                  {"nodeInfo", std::move(info)}};
  // Where other nodes, and the node's pods' clients, reach it (the agent's advertised address).
  json addresses = json::array();
  if (const std::string address = Str(status, "address"); !address.empty()) {
    addresses.push_back({{"type", "InternalIP"}, {"address", address}});
  }
  addresses.push_back({{"type", "Hostname"}, {"address", Str(Member(node, "metadata"), "name")}});
  kstatus["addresses"] = std::move(addresses);
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", std::move(out_meta)},
          {"spec", std::move(kspec)},
          {"status", std::move(kstatus)}};
}

Result<json> NodeWithKubeChanges(const json& stored, const json& view, const json& changed) {
  if (!changed.is_object()) return InvalidArgument("body: must be a Node");
  // What may change, taken out of both sides; the rest must be as served.
  auto rest = [](json n) {
    if (n["metadata"].is_object()) {
      for (const char* k : {"labels", "annotations", "resourceVersion", "uid", "managedFields",
                            "creationTimestamp", "generation"}) {
        n["metadata"].erase(k);
      }
    }
    if (n["spec"].is_object()) {
      n["spec"].erase("unschedulable");
      n["spec"].erase("taints");
      if (n["spec"].empty()) n.erase("spec");
    }
    n.erase("status");
    return n;
  };
  const json before = rest(view), after = rest(changed);
  if (before != after) {
    // The first difference as a field path: "/spec" with {"podCIDR": ...} is spec.podCIDR.
    const json diff = json::diff(before, after);
    std::string where = diff.empty() ? "" : Str(diff[0], "path");
    const json& value = diff.empty() ? json() : Member(diff[0], "value");
    if (value.is_object() && !value.empty()) where += "/" + value.begin().key();
    std::replace(where.begin(), where.end(), '/', '.');
    return InvalidArgument(
        (where.empty() ? std::string("node") : where.substr(1)) +
        ": a node's labels, annotations, spec.unschedulable and spec.taints may be changed here; "
        "the rest is reported by its agent");
  }
  json out = stored;
  out["metadata"].erase("resourceVersion");
  // Labels and annotations: the client's, less those the view adds and the client kept.
  auto own = [&](const char* field) {
    const json& was = Member(Member(stored, "metadata"), field);
    const json& shown = Member(Member(view, "metadata"), field);
    json now = Member(Member(changed, "metadata"), field);
    if (!now.is_object()) now = json::object();
    for (const auto& [k, v] : shown.items()) {
      const bool added = !was.is_object() || !was.contains(k);
      if (added && now.contains(k) && now[k] == v) now.erase(k);
    }
    if (now.empty()) {
      out["metadata"].erase(field);
    } else {
      out["metadata"][field] = std::move(now);
    }
  };
  own("labels");
  own("annotations");
  if (!out["spec"].is_object()) out["spec"] = json::object();
  const json& spec = Member(changed, "spec");
  if (Member(spec, "unschedulable") == true) {
    out["spec"]["unschedulable"] = true;
  } else {
    out["spec"].erase("unschedulable");
  }
  if (Member(spec, "taints").is_array() && !Member(spec, "taints").empty()) {
    out["spec"]["taints"] = Member(spec, "taints");
  } else {
    out["spec"].erase("taints");
  }
  return out;
}

}  // namespace tessera::api
