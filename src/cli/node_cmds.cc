#include "cli/node_cmds.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/gpu_quarantine.h"
#include "api/kinds.h"
#include "cli/command_io.h"

namespace tessera::cli {

using nlohmann::json;

namespace {

// Lifts the scheduling loop's quarantine of the GPU of index `gpu`, or with -1 the node's reboot
// mark; true when there was one.
bool LiftQuarantine(json& node, int64_t gpu) {
  auto q = api::QuarantineOf(node);
  if (!q.ok()) return false;
  const size_t before = q->gpus.size();
  const bool rebooting = q->reboot.has_value();
  if (gpu < 0) {
    q->reboot.reset();
  } else {
    std::erase_if(q->gpus, [&](const core::QuarantinedGpu& g) { return g.gpu == gpu; });
  }
  if (q->gpus.size() == before && rebooting == q->reboot.has_value()) return false;
  node = api::WithQuarantine(std::move(node), *q);
  return true;
}

// One card out of service or back (api::kCordonedGpusAnnotation, by UUID): named by its index
// or UUID among the node's reported GPUs.
int CordonGpu(const ResourceOptions& o, bool on, std::ostream& out, std::ostream& err) {
  std::string uuid, missing;
  int64_t index = -1;
  const int code = Update(
      o, "/apis/tessera.io/v1/nodes/" + o.name,
      [&](json& node) {
        const json& gpus = node["status"].is_object() ? node["status"].value("gpus", json::array())
                                                      : json::array();
        uuid.clear();
        for (const json& g : gpus) {
          if (!g.is_object()) continue;
          const std::string u = g.value("uuid", "");
          if (api::NamesGpu(o.gpu, u, g.value("index", int64_t{-1}))) {
            uuid = u;
            index = g.value("index", int64_t{-1});
          }
        }
        if (uuid.empty()) {
          missing =
              "error: node " + o.name + " reports no GPU \"" + o.gpu + "\" (an index or UUID)";
          return false;
        }
        // Uncordoning also lifts the loop's quarantine of the GPU (api/gpu_quarantine.h).
        bool lifted = false;
        if (!on) lifted = LiftQuarantine(node, index);
        std::vector<std::string> list = api::CordonedGpus(node);
        const bool there = std::find(list.begin(), list.end(), uuid) != list.end();
        if (there == on) return lifted;
        if (on) {
          list.push_back(uuid);
        } else {
          std::erase(list, uuid);
        }
        std::string value;
        for (const std::string& u : list) value += (value.empty() ? "" : ",") + u;
        json& annotations = node["metadata"]["annotations"];
        const std::string key(api::kCordonedGpusAnnotation);
        if (value.empty()) {
          if (annotations.is_object()) annotations.erase(key);
        } else {
          annotations[key] = value;
        }
        return true;
      },
      err);
  if (code != 0) return code;
  if (!missing.empty()) {
    err << missing << "\n";
    return kRefused;
  }
  out << "nodes/" << o.name << " GPU " << uuid << (on ? " cordoned" : " uncordoned") << "\n";
  return 0;
}

}  // namespace

int Cordon(const ResourceOptions& o, bool on, std::ostream& out, std::ostream& err) {
  if (!o.gpu.empty()) return CordonGpu(o, on, out, err);
  const int code = Update(
      o, "/apis/tessera.io/v1/nodes/" + o.name,
      [&](json& node) {
        if (!node["spec"].is_object()) node["spec"] = json::object();
        // Uncordoning also lifts a reboot mark of the loop's (api/gpu_quarantine.h).
        const bool lifted = !on && LiftQuarantine(node, -1);
        if (node["spec"].value("unschedulable", false) == on) return lifted;
        node["spec"]["unschedulable"] = on;
        return true;
      },
      err);
  if (code == 0) out << "nodes/" << o.name << (on ? " cordoned" : " uncordoned") << "\n";
  return code;
}

// Cordons the node, then evicts each pod on it through the eviction API, as kubectl drain does:
// a running Job goes back to its queue whole, a finished one stays finished (its pod is removed).
int Drain(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  if (int code = Cordon(o, true, out, err); code != 0) return code;
  int code = 0;
  auto pods = List(o, "/api/v1/pods?fieldSelector=spec.nodeName%3D" + o.name, err, &code);
  if (!pods) return code;
  int evicted = 0;
  for (const json& pod : *pods) {
    const std::string ns = pod["metadata"]["namespace"], name = pod["metadata"]["name"];
    const json eviction = {{"apiVersion", "policy/v1"},
                           {"kind", "Eviction"},
                           {"metadata", {{"name", name}, {"namespace", ns}}}};
    auto r = Send(o, "POST", "/api/v1/namespaces/" + ns + "/pods/" + name + "/eviction",
                  eviction.dump(), "application/json", err, &code);
    if (!r) return code;
    if (r->status == 404) continue;  // gone meanwhile
    if (r->status != 201) return Refused(*r, err);
    out << "pods/" << name << " (namespace " << ns
        << "): " << json::parse(r->body).value("message", "evicted") << "\n";
    ++evicted;
  }
  out << "nodes/" << o.name << " drained (" << evicted << " pod" << (evicted == 1 ? "" : "s")
      << " evicted)\n";
  return 0;
}

}  // namespace tessera::cli
