// GET /apis/tessera.io/v1/gpus: every GPU of every Node as the scheduler offers it: its sharing
// (whole, MIG with each instance's profile and memory slices, shares, time-slice replicas) from
// the GpuSharingConfigs applied as the scheduling loop applies them, its health, the admin's
// cordon and the loop's quarantine. The admin's (Nodes are); the web console's GPU map draws
// each card's parts from it. Query: node (one node's).
#include <nlohmann/json.hpp>
#include <string>

#include "api/gpu_quarantine.h"
#include "api/kinds.h"
#include "api/time.h"
#include "core/mig.h"
#include "server/api_server.h"

namespace tessera::server {

using json = nlohmann::json;

namespace {

std::string_view HealthName(core::GpuHealth h) {
  switch (h) {
    case core::GpuHealth::kHealthy:
      return "Healthy";
    case core::GpuHealth::kUnhealthy:
      return "Unhealthy";
    case core::GpuHealth::kCordoned:
      return "Cordoned";
  }
  return "Unhealthy";
}

json MigInstances(const core::GpuDevice& gpu) {
  json out = json::array();
  const core::MigGeometry* geo = core::FindMigGeometry(gpu.model);
  if (geo == nullptr) return out;
  for (size_t i = 0; i < gpu.sharing.mig.size(); ++i) {
    const core::MigInstance& m = gpu.sharing.mig[i];
    if (m.profile >= geo->profiles.size()) continue;
    const core::MigProfile& p = geo->profiles[m.profile];
    out.push_back({{"instance", i},
                   {"profile", std::string(p.name)},
                   {"start", m.start},
                   {"memorySlices", p.memory_slices},
                   {"computeSlices", p.compute_slices}});
  }
  return out;
}

// One GPU's entry; `cordoned` and `quarantine` from the node's annotations.
json GpuEntry(const core::NodeSpec& node, const core::GpuDevice& gpu,
              const std::vector<std::string>& cordoned, const core::NodeQuarantine& quarantine) {
  json g = {{"node", node.name},
            {"index", gpu.index},
            {"uuid", gpu.uuid},
            {"model", gpu.model},
            {"memoryMiB", gpu.memory_mib},
            {"health", HealthName(gpu.health)},
            {"mode", std::string(core::SharingModeName(gpu.sharing.mode))}};
  if (gpu.numa_node >= 0) g["numaNode"] = gpu.numa_node;
  if (gpu.nvlink_domain >= 0) g["nvlinkDomain"] = gpu.nvlink_domain;
  switch (gpu.sharing.mode) {
    case core::SharingMode::kTimeSlice:
      g["replicas"] = gpu.sharing.replicas;
      break;
    case core::SharingMode::kShared:
      g["mps"] = gpu.sharing.mps;
      break;
    case core::SharingMode::kMig:
      if (const core::MigGeometry* geo = core::FindMigGeometry(gpu.model)) {
        g["memorySlices"] = geo->memory_slices;
        g["computeSlices"] = geo->compute_slices;
      }
      g["mig"] = MigInstances(gpu);
      break;
    case core::SharingMode::kExclusive:
      break;
  }
  for (const std::string& c : cordoned) {
    if (api::NamesGpu(c, gpu.uuid, gpu.index)) g["cordoned"] = true;
  }
  for (const core::QuarantinedGpu& q : quarantine.gpus) {
    if (q.gpu != gpu.index) continue;
    g["quarantine"] = {{"xid", q.xid}, {"since", api::FormatTime(q.since_ms)}};
  }
  return g;
}

}  // namespace

HttpResponse ApiServer::Gpus(const HttpRequest& req, const Principal& who) {
  if (who.role != Principal::Role::kAdmin) {
    return Error(PermissionDenied("the GPUs are read with the admin token, as Nodes are"));
  }
  const std::string only = req.query.contains("node") ? req.query.at("node") : "";
  const int64_t revision = store_->Revision();
  auto nodes = store_->List("Node", std::nullopt);
  if (!nodes.ok()) return Error(nodes.status());
  const std::vector<api::GpuSharingConfigSpec> sharing = SharingConfigs();
  json items = json::array();
  for (const store::StoredObject& o : *nodes) {
    if (!only.empty() && o.key.name != only) continue;
    const json obj = json::parse(o.body, nullptr, false);
    auto node = api::DecodeNode(obj);
    if (!node.ok()) continue;  // a Node that does not decode offers nothing
    api::ApplySharing(sharing, &*node, nullptr);
    const std::vector<std::string> cordoned = api::CordonedGpus(obj);
    auto q = api::QuarantineOf(obj);
    const core::NodeQuarantine quarantine = q.ok() ? *q : core::NodeQuarantine{};
    for (const core::GpuDevice& gpu : node->gpus) {
      items.push_back(GpuEntry(*node, gpu, cordoned, quarantine));
    }
  }
  return Json(200, {{"apiVersion", "tessera.io/v1"},
                    {"kind", "GpuList"},
                    {"metadata", {{"resourceVersion", std::to_string(revision)}}},
                    {"items", std::move(items)}});
}

}  // namespace tessera::server
