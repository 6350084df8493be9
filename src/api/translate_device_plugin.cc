// NVIDIA device-plugin configs (a ConfigMap's values, the Helm chart's devicePlugin.config) as
// GpuSharingConfigs (see api/translate.h).
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "api/fields.h"
#include "api/kinds.h"
#include "api/kube_fields.h"
#include "api/object.h"
#include "api/quantity.h"
#include "api/resources.h"
#include "api/translate.h"
#include "api/yaml.h"

namespace tessera::api::translate {

using nlohmann::json;

namespace {

// One NVIDIA device-plugin config (the YAML text of a ConfigMap value) as a GpuSharingConfig
// spec, or an error at `path`.
Result<json> DevicePluginConfig(const std::string& text, const std::string& path) {
  Result<std::vector<json>> docs = ParseYamlDocuments(text);
  if (!docs.ok()) return FieldError(path, docs.status().message());
  if (docs->size() != 1 || !(*docs)[0].is_object()) {
    return FieldError(path, "must be one device-plugin config (version, flags, sharing)");
  }
  const json& cfg = (*docs)[0];
  TESSERA_RETURN_IF_ERROR(OnlyFields(cfg, path, {"version", "flags", "sharing"}, kNotRun));
  const std::string mig = Text(Member(cfg, "flags"), "migStrategy");
  TESSERA_RETURN_IF_ERROR(
      OnlyFields(Member(cfg, "flags"), path + ".flags",
                 {"migStrategy", "failOnInitError", "nvidiaDriverRoot", "plugin"}, kNotRun));
  if (!mig.empty() && mig != "none") {
    return FieldError(
        path + ".flags.migStrategy",
        "\"" + mig + "\": MIG layouts are set per GPU with a GpuSharingConfig mig block");
  }
  const json& sharing = Member(cfg, "sharing");
  TESSERA_RETURN_IF_ERROR(OnlyFields(sharing, path + ".sharing", {"timeSlicing"},
                                     "not supported: use a GpuSharingConfig shared block"));
  const json& ts = Member(sharing, "timeSlicing");
  if (ts.empty()) return json{{"exclusive", json::object()}};
  const std::string tp = path + ".sharing.timeSlicing";
  TESSERA_RETURN_IF_ERROR(
      OnlyFields(ts, tp, {"renameByDefault", "failRequestsGreaterThanOne", "resources"}, kNotRun));
  const json& res = Member(ts, "resources");
  if (!res.is_array() || res.size() != 1 || Text(res[0], "name") != "nvidia.com/gpu") {
    return FieldError(tp + ".resources", "must list nvidia.com/gpu once, with its replicas");
  }
  TESSERA_RETURN_IF_ERROR(
      OnlyFields(res[0], tp + ".resources[0]", {"name", "replicas", "devices"}, kNotRun));
  // devices: "all", or the GPUs (indices or UUIDs) time-sliced; the node's others stay whole.
  json gpus = json::array();
  if (const json& devices = Member(res[0], "devices");
      res[0].contains("devices") && devices != "all") {
    const std::string dp = tp + ".resources[0].devices";
    if (!devices.is_array() || devices.empty()) {
      return FieldError(dp, "must be \"all\" or a list of GPU indices or UUIDs");
    }
    for (size_t i = 0; i < devices.size(); ++i) {
      const json& d = devices[i];
      std::string id = d.is_number_integer() && d.get<int64_t>() >= 0
                           ? std::to_string(d.get<int64_t>())
                       : d.is_string() ? d.get<std::string>()
                                       : std::string();
      const bool index =
          !id.empty() && id.size() <= 4 &&
          std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!index && !id.starts_with("GPU-")) {
        return FieldError(Index(dp, i),
                          "must be a GPU index or a GPU UUID (GPU-...); MIG devices are set per "
                          "GPU with a GpuSharingConfig mig block");
      }
      gpus.push_back(id);
    }
  }
  json out = {{"replicas", Member(res[0], "replicas")}};
  for (const char* k : {"renameByDefault", "failRequestsGreaterThanOne"}) {
    if (ts.contains(k)) out[k] = ts[k];
  }
  json spec = {{"timeSlicing", out}};
  if (!gpus.empty()) spec["gpus"] = std::move(gpus);
  return spec;
}

constexpr std::string_view kConfigLabel = "nvidia.com/device-plugin.config";

}  // namespace

// GpuSharingConfigs from device-plugin configs by name; `default_name` covers unlabeled nodes.
// A default config reaches every node without the label: `warnings` says so, naming the key.
Result<std::vector<json>> SharingConfigs(const std::string& prefix, const json& data,
                                         const std::string& path, const std::string& default_name,
                                         Warnings* warnings) {
  if (!data.is_object() || data.empty())
    return FieldError(path, "must map config names to configs");
  std::vector<json> out;
  for (const auto& [key, text] : data.items()) {
    if (!text.is_string())
      return FieldError(path + "." + key, "must be a device-plugin config text");
    Result<json> spec = DevicePluginConfig(text.get<std::string>(), path + "." + key);
    if (!spec.ok()) return spec.status();
    const bool is_default = key == default_name;
    if (is_default) {
      (*spec)["default"] = true;
      if (warnings != nullptr) {
        warnings->push_back(path + "." + key +
                            ": applies to every GPU of every node without the label " +
                            std::string(kConfigLabel) +
                            " (it is the default config); label nodes with other configs to "
                            "keep them out of its reach");
      }
    } else {
      (*spec)["nodeSelector"] = {{kConfigLabel, key}};
    }
    std::string name = prefix + "-" + key;
    for (char& c : name) c = (c == '_' ? '-' : static_cast<char>(std::tolower(c)));
    out.push_back(Object("GpuSharingConfig", name, "", kEmpty, kEmpty, *spec));
  }
  return out;
}

}  // namespace tessera::api::translate
