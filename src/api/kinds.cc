// The decoders of Tessera's gangs, GPU sharing configs, nodes, leases and events; Jobs are decoded
// in api/job_decode.cc, the queueing kinds in api/queue_kinds.cc.
#include "api/kinds.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "api/fields.h"
#include "api/gpu_checkup.h"
#include "api/gpu_quarantine.h"
#include "api/json_read.h"
#include "api/json_text.h"
#include "api/kinds_common.h"
#include "api/object.h"
#include "api/pod_failure_policy.h"
#include "api/quantity.h"
#include "api/resources.h"
#include "api/status_schema.h"
#include "api/time.h"
#include "core/mig.h"

namespace tessera::api {

using nlohmann::json;

namespace kinds_detail {

const nlohmann::json kNull;

const json& Spec(const json& obj) {
  const auto it = obj.find("spec");
  return it == obj.end() ? kNull : *it;
}

std::string MetaString(const json& obj, const char* key) {
  const json& meta = obj.at("metadata");
  return meta.contains(key) && meta.at(key).is_string() ? meta.at(key).get<std::string>() : "";
}

}  // namespace kinds_detail

using kinds_detail::ForEachItem;
using kinds_detail::kNull;
using kinds_detail::MetaString;
using kinds_detail::Spec;

namespace kinds_detail {

Result<std::vector<core::Toleration>> DecodeTolerations(Fields& f, std::string_view key) {
  std::vector<core::Toleration> out;
  TESSERA_RETURN_IF_ERROR(ForEachItem(f, key, [&](const json& item, const std::string& path) {
    Fields t(item, path, false);
    core::Toleration tol;
    int op = 0, effect = -1;
    TESSERA_RETURN_IF_ERROR(t.String("key", &tol.key));
    TESSERA_RETURN_IF_ERROR(t.Enum("operator", {"Equal", "Exists"}, &op));
    TESSERA_RETURN_IF_ERROR(t.String("value", &tol.value));
    TESSERA_RETURN_IF_ERROR(
        t.Enum("effect", {"NoSchedule", "PreferNoSchedule", "NoExecute"}, &effect));
    int64_t seconds = 0;
    TESSERA_RETURN_IF_ERROR(t.Int("tolerationSeconds", &seconds, 0, int64_t{1} << 40));
    TESSERA_RETURN_IF_ERROR(t.Finish());
    tol.op = op == 1 ? core::TolerationOp::kExists : core::TolerationOp::kEqual;
    if (tol.op == core::TolerationOp::kExists && !tol.value.empty()) {
      return FieldError(path + ".value", "must be empty with operator Exists");
    }
    if (tol.op == core::TolerationOp::kEqual && tol.key.empty()) {
      return FieldError(path + ".key", "is required with operator Equal");
    }
    tol.any_effect = effect < 0;
    if (effect >= 0) tol.effect = static_cast<core::TaintEffect>(effect);
    out.push_back(std::move(tol));
    return Status::Ok();
  }));
  return out;
}

// Taints as Kubernetes writes them: {key, value, effect} (effect NoSchedule when left out).
Result<std::vector<core::Taint>> DecodeTaints(Fields& f, std::string_view key) {
  std::vector<core::Taint> out;
  TESSERA_RETURN_IF_ERROR(ForEachItem(f, key, [&](const json& item, const std::string& path) {
    Fields t(item, path, false);
    core::Taint taint;
    int effect = 0;
    TESSERA_RETURN_IF_ERROR(t.String("key", &taint.key, true));
    TESSERA_RETURN_IF_ERROR(t.String("value", &taint.value));
    TESSERA_RETURN_IF_ERROR(
        t.Enum("effect", {"NoSchedule", "PreferNoSchedule", "NoExecute"}, &effect));
    TESSERA_RETURN_IF_ERROR(t.Finish());
    taint.effect = static_cast<core::TaintEffect>(effect);
    out.push_back(std::move(taint));
    return Status::Ok();
  }));
  return out;
}

}  // namespace kinds_detail

using kinds_detail::DecodeTaints;
using kinds_detail::DecodeTolerations;

std::string EnvVarSuffix(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    c = (c == '-' || c == '.') ? '_'
                               : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

namespace {

// A MIG layout (profile counts) that no MIG-capable model can take is refused: the error names
// the profile and the models' profiles, or the models that have them all and why each refuses.
// Whether the cards a config reaches can take it is known only per node (the scheduling loop
// reports it in the config's status).
Status CheckMigLayoutSomewhere(const std::vector<std::pair<std::string, int>>& layout,
                               const std::string& path) {
  for (const auto& [profile, count] : layout) {
    bool known = false;
    for (const core::MigGeometry& g : core::MigCatalog())
      known = known || g.FindProfile(profile) >= 0;
    if (known) continue;
    std::string choices;
    for (const core::MigGeometry& g : core::MigCatalog()) {
      choices += std::string(choices.empty() ? "" : "; ") + std::string(g.model) + ":";
      for (const core::MigProfile& p : g.profiles) choices += " " + std::string(p.name);
    }
    return FieldError(path + "." + profile,
                      "no MIG-capable GPU has profile \"" + profile + "\" (" + choices + ")");
  }
  std::string why;
  for (const core::MigGeometry& g : core::MigCatalog()) {
    auto placed = core::PlaceMigLayout(g, layout);
    if (placed.ok()) return Status::Ok();
    bool has_all = true;
    for (const auto& [profile, count] : layout) has_all = has_all && g.FindProfile(profile) >= 0;
    if (has_all)
      why += (why.empty() ? "" : "; ") + std::string(g.model) + ": " + placed.status().message();
  }
  return FieldError(path,
                    "fits no MIG-capable GPU" + (why.empty() ? std::string(" (no model has all "
                                                                           "these profiles)")
                                                             : " (" + why + ")"));
}

}  // namespace

Result<PodGroupSpec> DecodePodGroup(const json& obj) {
  PodGroupSpec pg;
  pg.namespace_name = MetaString(obj, "namespace");
  pg.name = MetaString(obj, "name");
  Fields spec(Spec(obj), "spec");
  int64_t min_member = 1;
  TESSERA_RETURN_IF_ERROR(spec.Int("minMember", &min_member, 1, 100'000));
  pg.min_member = static_cast<int32_t>(min_member);
  TESSERA_RETURN_IF_ERROR(spec.String("queue", &pg.queue));
  TESSERA_RETURN_IF_ERROR(spec.String("priorityClassName", &pg.priority_class));
  ResourceList min_resources;
  TESSERA_RETURN_IF_ERROR(spec.StringMap("minResources", &min_resources, true));
  TESSERA_RETURN_IF_ERROR(
      ApplyContainerResources(min_resources, {}, "spec.minResources", &pg.min_resources));
  if (const json* tasks = spec.Get("minTaskMember"); tasks != nullptr && !tasks->is_null()) {
    if (!tasks->is_object()) {
      return FieldError(spec.At("minTaskMember"), "must map task names to pod counts");
    }
    for (const auto& [task, n] : tasks->items()) {
      const std::string p = spec.At("minTaskMember") + "." + task;
      TESSERA_RETURN_IF_ERROR(ValidateName(task, true, p));
      if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() > 10'000) {
        return FieldError(p, "must be a pod count from 0 to 10000");
      }
      pg.min_task_member[task] = static_cast<int32_t>(n.get<int64_t>());
    }
  }
  TESSERA_RETURN_IF_ERROR(spec.Finish());
  return pg;
}

namespace {

bool LabelsMatch(const core::Labels& labels, const core::Labels& selector) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace

void ApplySharing(const std::vector<GpuSharingConfigSpec>& configs, core::NodeSpec* node,
                  std::map<std::string, std::vector<std::string>>* invalid) {
  bool selected = false;
  for (const auto& c : configs)
    selected = selected || (!c.is_default && LabelsMatch(node->labels, c.node_selector) &&
                            !c.node_selector.empty());
  for (core::GpuDevice& gpu : node->gpus) {
    for (const auto& c : configs) {
      const bool applies =
          c.is_default ? !selected
                       : (c.node_selector.empty() || LabelsMatch(node->labels, c.node_selector));
      if (!applies) continue;
      const bool listed =
          c.gpus.empty() ||
          std::find(c.gpus.begin(), c.gpus.end(), std::to_string(gpu.index)) != c.gpus.end() ||
          std::find(c.gpus.begin(), c.gpus.end(), gpu.uuid) != c.gpus.end();
      if (!listed) continue;
      gpu.sharing = c.sharing;
      if (c.sharing.mode == core::SharingMode::kMig) {
        const core::MigGeometry* geo = core::FindMigGeometry(gpu.model);
        auto layout = geo ? core::PlaceMigLayout(*geo, c.mig_layout)
                          : Result<std::vector<core::MigInstance>>(
                                InvalidArgument(gpu.model + " is not MIG-capable"));
        if (!layout.ok()) {
          if (invalid != nullptr) {
            (*invalid)[c.name].push_back(
                "node " + node->name + " GPU " + std::to_string(gpu.index) + " (" + gpu.model +
                "): " + layout.status().message() + "; the GPU stays exclusive");
          }
          gpu.sharing = {};
          break;
        }
        gpu.sharing.mig = std::move(layout).value();
      }
      break;
    }
  }
}

Result<GpuSharingConfigSpec> DecodeGpuSharingConfig(const json& obj) {
  GpuSharingConfigSpec c;
  c.name = MetaString(obj, "name");
  Fields spec(Spec(obj), "spec");
  TESSERA_RETURN_IF_ERROR(spec.StringMap("nodeSelector", &c.node_selector));
  TESSERA_RETURN_IF_ERROR(spec.Bool("default", &c.is_default));
  if (c.is_default && !c.node_selector.empty()) {
    return FieldError("spec.default", "a default config has no nodeSelector");
  }
  TESSERA_RETURN_IF_ERROR(spec.StringList("gpus", &c.gpus));
  int modes = 0;
  if (const json* ts = spec.Get("timeSlicing")) {
    ++modes;
    Fields f(*ts, spec.At("timeSlicing"), false);
    int64_t replicas = 0;
    TESSERA_RETURN_IF_ERROR(f.Int("replicas", &replicas, 2, 1024, true));
    TESSERA_RETURN_IF_ERROR(f.Bool("renameByDefault", &c.sharing.rename));
    TESSERA_RETURN_IF_ERROR(
        f.Bool("failRequestsGreaterThanOne", &c.sharing.fail_requests_greater_than_one));
    TESSERA_RETURN_IF_ERROR(f.Finish());
    c.sharing.mode = core::SharingMode::kTimeSlice;
    c.sharing.replicas = static_cast<uint16_t>(replicas);
  }
  if (const json* sh = spec.Get("shared")) {
    ++modes;
    Fields f(*sh, spec.At("shared"), false);
    TESSERA_RETURN_IF_ERROR(f.Bool("mps", &c.sharing.mps));
    TESSERA_RETURN_IF_ERROR(f.Finish());
    c.sharing.mode = core::SharingMode::kShared;
  }
  if (const json* mig = spec.Get("mig")) {
    ++modes;
    Fields f(*mig, spec.At("mig"), false);
    std::map<std::string, std::string> unused;
    const json* layout = f.Get("layout");
    const std::string lpath = f.At("layout");
    if (layout == nullptr || !layout->is_object() || layout->empty()) {
      return FieldError(lpath, "must map MIG profiles to counts, e.g. {\"1g.10gb\": 7}");
    }
    Fields lf(*layout, lpath, false);
    for (const auto& [profile, count] : layout->items()) {
      int64_t n = 0;
      TESSERA_RETURN_IF_ERROR(lf.Int(profile, &n, 1, 7, true));
      c.mig_layout.emplace_back(profile, static_cast<int>(n));
    }
    TESSERA_RETURN_IF_ERROR(CheckMigLayoutSomewhere(c.mig_layout, lpath));
    TESSERA_RETURN_IF_ERROR(f.Finish());
    c.sharing.mode = core::SharingMode::kMig;
  }
  if (const json* ex = spec.Get("exclusive")) {
    ++modes;
    TESSERA_RETURN_IF_ERROR(Fields(*ex, spec.At("exclusive")).Finish());
  }
  if (modes != 1) {
    return FieldError("spec", "must set exactly one of timeSlicing, shared, mig, exclusive");
  }
  TESSERA_RETURN_IF_ERROR(spec.Finish());
  return c;
}

std::vector<std::string> CordonedGpus(const json& node) {
  std::vector<std::string> out;
  const json& annotations = Member(Member(node, "metadata"), "annotations");
  const json& value = Member(annotations, std::string(kCordonedGpusAnnotation).c_str());
  if (!value.is_string()) return out;
  std::stringstream list(value.get<std::string>());
  for (std::string item; std::getline(list, item, ',');) {
    const size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

bool NamesGpu(std::string_view name, std::string_view uuid, int64_t index) {
  return name == uuid || name == std::to_string(index);
}

Result<core::NodeSpec> DecodeNode(const json& obj) {
  core::NodeSpec n;
  n.name = MetaString(obj, "name");
  if (const json& labels = obj.at("metadata").value("labels", json()); labels.is_object()) {
    for (const auto& [k, v] : labels.items()) n.labels[k] = v.get<std::string>();
  }
  // Every Kubernetes node carries its name in this label; selectors and nodeName rely on it.
  n.labels.emplace("kubernetes.io/hostname", n.name);
  Fields spec(Spec(obj), "spec");
  TESSERA_RETURN_IF_ERROR(spec.Bool("unschedulable", &n.unschedulable));
  auto taints = DecodeTaints(spec, "taints");
  if (!taints.ok()) return taints.status();
  n.taints = std::move(taints).value();
  TESSERA_RETURN_IF_ERROR(spec.Finish());
  const auto st = obj.find("status");
  Fields status(st == obj.end() ? kNull : *st, "status");
  if (const json* alloc = status.Get("allocatable")) {
    Fields a(*alloc, "status.allocatable", false);
    ResourceList list;
    for (const char* r : {"cpu", "memory"}) {
      if (const json* v = a.Get(r)) {
        if (!v->is_string() && !v->is_number()) return FieldError(a.At(r), "must be a quantity");
        list[r] = v->is_string() ? v->get<std::string>() : v->dump();
      }
    }
    TESSERA_RETURN_IF_ERROR(a.Finish());
    core::PodSpec probe;
    TESSERA_RETURN_IF_ERROR(ApplyContainerResources(list, {}, "status.allocatable", &probe));
    n.allocatable = probe.requests;
  }
  if (const json* gpus = status.Get("gpus")) {
    if (!gpus->is_array()) return FieldError("status.gpus", "must be a list");
    if (gpus->size() > 64) return FieldError("status.gpus", "at most 64 GPUs per node");
    for (size_t i = 0; i < gpus->size(); ++i) {
      Fields g((*gpus)[i], Index("status.gpus", i), false);
      core::GpuDevice d;
      int64_t index = 0, mem = 0, numa = -1, nvlink = -1;
      int health = 0;
      TESSERA_RETURN_IF_ERROR(g.Int("index", &index, 0, 63, true));
      TESSERA_RETURN_IF_ERROR(g.String("uuid", &d.uuid, true));
      TESSERA_RETURN_IF_ERROR(g.String("model", &d.model, true));
      TESSERA_RETURN_IF_ERROR(g.Int("memoryMiB", &mem, 1, 4 << 20, true));
      TESSERA_RETURN_IF_ERROR(g.Int("numaNode", &numa, -1, 1023));
      TESSERA_RETURN_IF_ERROR(g.Int("nvlinkDomain", &nvlink, -1, 32767));
      TESSERA_RETURN_IF_ERROR(g.Enum("health", {"Healthy", "Unhealthy"}, &health));
      TESSERA_RETURN_IF_ERROR(g.Finish());
      d.index = static_cast<uint16_t>(index);
      d.memory_mib = mem;
      d.numa_node = static_cast<int16_t>(numa);
      d.nvlink_domain = static_cast<int16_t>(nvlink);
      d.health = health == 0 ? core::GpuHealth::kHealthy : core::GpuHealth::kUnhealthy;
      n.gpus.push_back(std::move(d));
    }
    for (const std::string& c : CordonedGpus(obj)) {
      for (core::GpuDevice& d : n.gpus) {
        if (NamesGpu(c, d.uuid, d.index)) d.health = core::GpuHealth::kCordoned;
      }
    }
  }
  // Quarantined by the scheduling loop for an Xid (api/gpu_quarantine.h): cordoned as well.
  auto quarantine = QuarantineOf(obj);
  if (!quarantine.ok()) return quarantine.status();
  for (const core::QuarantinedGpu& q : quarantine->gpus) {
    for (core::GpuDevice& d : n.gpus) {
      if (d.index == q.gpu) d.health = core::GpuHealth::kCordoned;
    }
  }
  if (const json* telemetry = status.Get("telemetry")) {
    if (!telemetry->is_array()) return FieldError("status.telemetry", "must be a list");
    for (size_t i = 0; i < telemetry->size(); ++i) {
      Fields t((*telemetry)[i], Index("status.telemetry", i), false);
      int64_t v = 0;
      for (const char* k :
           {"index", "utilizationPct", "memoryUtilizationPct", "memoryUsedMiB", "memoryFreeMiB",
            "temperatureC", "powerMw", "smClockMhz", "eccCorrected", "eccUncorrected", "xidCount",
            "nvlinkDataKiB", "nvlinkKiBps", "pcieTxKiBps", "pcieRxKiBps"}) {
        TESSERA_RETURN_IF_ERROR(t.Int(k, &v, 0, int64_t{1} << 53));
      }
      const json* procs = t.Get("processes");
      if (procs != nullptr && !procs->is_array()) {
        return FieldError(t.At("processes"), "must be a list");
      }
      TESSERA_RETURN_IF_ERROR(t.Finish());
    }
  }
  if (auto c = DecodeCheckups(status.Get("checkups")); !c.ok()) return c.status();
  if (auto x = DecodeXids(status.Get("xids")); !x.ok()) return x.status();
  TESSERA_RETURN_IF_ERROR(ValidateResets(status.Get("resets")));
  std::string text;
  TESSERA_RETURN_IF_ERROR(status.String("heartbeat", &text));
  TESSERA_RETURN_IF_ERROR(status.String("driverVersion", &text));
  TESSERA_RETURN_IF_ERROR(status.String("address", &text));
  TESSERA_RETURN_IF_ERROR(status.String("bootId", &text));
  int64_t fence = 0;
  TESSERA_RETURN_IF_ERROR(status.Int("fenceSeconds", &fence, 0, 86400));
  TESSERA_RETURN_IF_ERROR(status.Finish());
  if (Status s = core::ValidateNodeSpec(n); !s.ok()) return FieldError("status", s.message());
  return n;
}

Status ValidateSpec(const json& obj) {
  const std::string kind = obj.at("kind").get<std::string>();
  if (kind == "Job") return DecodeJob(obj).status();
  if (kind == "PodGroup") return DecodePodGroup(obj).status();
  if (kind == "Queue") return DecodeQueue(obj).status();
  if (kind == "Cohort") return DecodeCohort(obj).status();
  if (kind == "LocalQueue") return DecodeLocalQueue(obj).status();
  if (kind == "ResourceFlavor") return DecodeResourceFlavor(obj).status();
  if (kind == "PriorityClass") return DecodePriorityClass(obj).status();
  if (kind == "NamespaceQuota") return DecodeNamespaceQuota(obj).status();
  if (kind == "GpuSharingConfig") return DecodeGpuSharingConfig(obj).status();
  if (kind == "Node") return DecodeNode(obj).status();
  if (kind == "Namespace") {
    TESSERA_RETURN_IF_ERROR(ValidateName(MetaString(obj, "name"), true, "metadata.name"));
    return Fields(Spec(obj), "spec").Finish();
  }
  if (kind == "Lease") {
    Fields spec(Spec(obj), "spec");
    std::string holder, renewed;
    int64_t seconds = 0;
    TESSERA_RETURN_IF_ERROR(spec.String("holderIdentity", &holder));
    TESSERA_RETURN_IF_ERROR(spec.Int("leaseDurationSeconds", &seconds, 1, 86400));
    TESSERA_RETURN_IF_ERROR(spec.String("renewTime", &renewed));
    if (!renewed.empty() && ParseTime(renewed) < 0) {
      return FieldError("spec.renewTime", "must be an RFC 3339 time");
    }
    return spec.Finish();
  }
  if (kind == "Event") {
    Fields spec(Spec(obj), "spec");
    std::string text;
    int type = 0;
    TESSERA_RETURN_IF_ERROR(spec.Enum("type", {"Normal", "Warning"}, &type));
    TESSERA_RETURN_IF_ERROR(spec.String("reason", &text, true));
    TESSERA_RETURN_IF_ERROR(spec.String("message", &text));
    TESSERA_RETURN_IF_ERROR(spec.String("time", &text));
    if (const json* inv = spec.Get("involvedObject")) {
      Fields i(*inv, "spec.involvedObject", false);
      TESSERA_RETURN_IF_ERROR(i.String("kind", &text, true));
      TESSERA_RETURN_IF_ERROR(i.String("name", &text, true));
      TESSERA_RETURN_IF_ERROR(i.Finish());
    }
    return spec.Finish();
  }
  return InvalidArgument("kind: no spec schema for " + kind);
}

bool AgentReportedNodeLabel(std::string_view key) {
  return key.starts_with("nvidia.com/") || key == "tessera.io/gpu.source" ||
         key == "tessera.io/simulated";
}

Status CheckAgentNodeChange(const json& stored, const json& next) {
  const std::string node = Str(Member(stored, "metadata"), "name");
  auto refuse = [&](const std::string& field, std::string_view what) {
    return PermissionDenied(field + ": node " + node + "'s agent may not change " +
                            std::string(what) +
                            " once the node is registered; they are the admin's (kubectl "
                            "label, annotate, taint, cordon)");
  };
  auto object_or_empty = [](const json& v) { return v.is_object() ? v : json::object(); };
  const json old_spec = object_or_empty(Member(stored, "spec"));
  const json new_spec = object_or_empty(Member(next, "spec"));
  if (old_spec != new_spec) {
    std::string field = "spec";
    for (const json* side : {&old_spec, &new_spec}) {
      for (const auto& [k, v] : side->items()) {
        if (Member(old_spec, k.c_str()) != Member(new_spec, k.c_str())) field = "spec." + k;
      }
    }
    return refuse(field, "its spec (unschedulable, taints)");
  }
  const json& old_meta = Member(stored, "metadata");
  const json& new_meta = Member(next, "metadata");
  if (object_or_empty(Member(old_meta, "annotations")) !=
      object_or_empty(Member(new_meta, "annotations"))) {
    return refuse("metadata.annotations", "its annotations");
  }
  const json old_labels = object_or_empty(Member(old_meta, "labels"));
  const json new_labels = object_or_empty(Member(new_meta, "labels"));
  for (const json* side : {&old_labels, &new_labels}) {
    for (const auto& [k, v] : side->items()) {
      if (Member(old_labels, k.c_str()) != Member(new_labels, k.c_str()) &&
          !AgentReportedNodeLabel(k)) {
        return refuse("metadata.labels[" + SafeText(k, 128) + "]", "the admin's labels");
      }
    }
  }
  return Status::Ok();
}

std::string NodeHeartbeat(const json& node, const json& lease) {
  const std::string beat = Str(Member(node, "status"), "heartbeat");
  const std::string renewed = Str(Member(lease, "spec"), "renewTime");
  return ParseTime(renewed) > ParseTime(beat) ? renewed : beat;
}

}  // namespace tessera::api
