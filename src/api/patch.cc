#include "api/patch.h"

#include <algorithm>
#include <optional>
#include <string>

#include "api/fields.h"

namespace tessera::api {

using nlohmann::json;

namespace {

constexpr std::string_view kOrderPrefix = "$setElementOrder/";
constexpr std::string_view kDeletePrimitivePrefix = "$deleteFromPrimitiveList/";

// Lists of scalars whose patch strategy is merge (their union is kept).
bool MergesPrimitives(std::string_view field) { return field == "finalizers"; }

bool SameKey(const json& element, const std::string& key, const json& value) {
  return element.is_object() && element.contains(key) && element[key] == value;
}

Result<std::optional<json>> MergeMap(json original, const json& patch, const std::string& path);

// Merges a list of objects on `key`; `patch` is the patch's list for the field.
Result<json> MergeList(json original, const json& patch, const std::string& key,
                       const std::string& path) {
  for (const json& e : patch) {
    if (e.is_object() && e.size() == 1 && e.value("$patch", "") == "replace") {
      json out = json::array();
      for (const json& x : patch) {
        if (&x == &e) continue;
        Result<std::optional<json>> m = MergeMap(json::object(), x, path);
        if (!m.ok()) return m.status();
        if (*m) out.push_back(std::move(**m));
      }
      return out;
    }
  }
  if (!original.is_array()) original = json::array();
  for (size_t i = 0; i < patch.size(); ++i) {
    const json& e = patch[i];
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains(key)) {
      return FieldError(at, "must be an object with the merge key \"" + key + "\"");
    }
    const json& value = e[key];
    if (e.value("$patch", "") == "delete") {
      original.erase(std::remove_if(original.begin(), original.end(),
                                    [&](const json& x) { return SameKey(x, key, value); }),
                     original.end());
      continue;
    }
    auto it = std::find_if(original.begin(), original.end(),
                           [&](const json& x) { return SameKey(x, key, value); });
    Result<std::optional<json>> m = MergeMap(it == original.end() ? json::object() : *it, e, at);
    if (!m.ok()) return m.status();
    if (it == original.end()) {
      if (*m) original.push_back(std::move(**m));
    } else if (*m) {
      *it = std::move(**m);
    } else {
      original.erase(it);
    }
  }
  return original;
}

// Puts the elements `order` names first, in its order; the others keep theirs after them.
json Reorder(const json& list, const json& order, std::string_view key) {
  if (!list.is_array() || !order.is_array()) return list;
  json out = json::array();
  std::vector<bool> used(list.size(), false);
  for (const json& o : order) {
    for (size_t i = 0; i < list.size(); ++i) {
      const bool match = key.empty() ? list[i] == o
                                     : (o.is_object() && o.contains(std::string(key)) &&
                                        SameKey(list[i], std::string(key), o[std::string(key)]));
      if (!used[i] && match) {
        used[i] = true;
        out.push_back(list[i]);
        break;
      }
    }
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (!used[i]) out.push_back(list[i]);
  }
  return out;
}

// The strategic merge of `patch` into `original`; nullopt when the patch deletes the map.
Result<std::optional<json>> MergeMap(json original, const json& patch, const std::string& path) {
  if (!patch.is_object()) return std::optional<json>(patch);
  if (!original.is_object()) original = json::object();
  const std::string directive = patch.value("$patch", "");
  if (directive == "delete") return std::optional<json>();
  if (directive == "replace") original = json::object();
  if (!directive.empty() && directive != "replace" && directive != "merge") {
    return FieldError(path.empty() ? "$patch" : path + ".$patch",
                      "unknown directive \"" + directive + "\" (replace, delete or merge)");
  }
  for (const auto& [k, v] : patch.items()) {
    if (k == "$patch" || k == "$retainKeys" || k.starts_with(kOrderPrefix) ||
        k.starts_with(kDeletePrimitivePrefix)) {
      continue;
    }
    if (k.starts_with("$")) {
      return FieldError(path.empty() ? k : path + "." + k, "unknown patch directive");
    }
    const std::string at = path.empty() ? k : path + "." + k;
    if (v.is_null()) {
      original.erase(k);
      continue;
    }
    const std::string_view key = StrategicMergeKey(k);
    if (v.is_object()) {
      Result<std::optional<json>> m = MergeMap(original.value(k, json::object()), v, at);
      if (!m.ok()) return m.status();
      if (*m) {
        original[k] = std::move(**m);
      } else {
        original.erase(k);
      }
    } else if (v.is_array() && !key.empty()) {
      Result<json> m = MergeList(original.value(k, json::array()), v, std::string(key), at);
      if (!m.ok()) return m.status();
      original[k] = std::move(*m);
    } else if (v.is_array() && MergesPrimitives(k) && original.contains(k) &&
               original[k].is_array()) {
      for (const json& x : v) {
        if (std::find(original[k].begin(), original[k].end(), x) == original[k].end()) {
          original[k].push_back(x);
        }
      }
    } else {
      Result<std::optional<json>> m = MergeMap(json::object(), v, at);
      if (!m.ok()) return m.status();
      original[k] = v.is_object() ? **m : v;
    }
  }
  for (const auto& [k, v] : patch.items()) {
    if (k.starts_with(kDeletePrimitivePrefix)) {
      const std::string field = k.substr(kDeletePrimitivePrefix.size());
      if (!original.contains(field) || !original[field].is_array() || !v.is_array()) continue;
      json& list = original[field];
      list.erase(std::remove_if(
                     list.begin(), list.end(),
                     [&](const json& x) { return std::find(v.begin(), v.end(), x) != v.end(); }),
                 list.end());
    } else if (k.starts_with(kOrderPrefix)) {
      const std::string field = k.substr(kOrderPrefix.size());
      if (original.contains(field)) {
        original[field] = Reorder(original[field], v, StrategicMergeKey(field));
      }
    }
  }
  if (const auto retain = patch.find("$retainKeys"); retain != patch.end()) {
    if (!retain->is_array()) {
      return FieldError(path.empty() ? "$retainKeys" : path + ".$retainKeys", "must be a list");
    }
    for (auto it = original.begin(); it != original.end();) {
      if (std::find(retain->begin(), retain->end(), it.key()) == retain->end()) {
        it = original.erase(it);
      } else {
        ++it;
      }
    }
  }
  return std::optional<json>(std::move(original));
}

}  // namespace

std::string_view StrategicMergeKey(std::string_view field) {
  static constexpr std::pair<std::string_view, std::string_view> kKeys[] = {
      {"containers", "name"},
      {"initContainers", "name"},
      {"ephemeralContainers", "name"},
      {"env", "name"},
      {"volumes", "name"},
      {"imagePullSecrets", "name"},
      {"resourceClaims", "name"},
      {"schedulingGates", "name"},
      {"volumeMounts", "mountPath"},
      {"volumeDevices", "devicePath"},
      {"ports", "containerPort"},
      {"hostAliases", "ip"},
      {"ownerReferences", "uid"},
      {"conditions", "type"},
      {"taints", "key"},
      {"addresses", "type"},
      {"topologySpreadConstraints", "topologyKey"},
  };
  for (const auto& [name, key] : kKeys) {
    if (name == field) return key;
  }
  return "";
}

Result<PatchType> PatchTypeOf(std::string_view content_type, bool apply_served) {
  const std::string_view type = content_type.substr(0, content_type.find(';'));
  if (type == "application/apply-patch+yaml" && apply_served) return PatchType::kApply;
  if (type == "application/merge-patch+json") return PatchType::kMerge;
  if (type == "application/json-patch+json") return PatchType::kJson;
  if (type == "application/strategic-merge-patch+json") return PatchType::kStrategicMerge;
  std::string what = "Content-Type \"" + std::string(type) + "\" is not a patch type Tessera takes";
  if (type == "application/apply-patch+yaml") {
    what +=
        " here (server-side apply is served on the Kubernetes, Kueue and Volcano kinds' paths; "
        "use kubectl apply without --server-side)";
  }
  return InvalidArgument(what +
                         "; use application/merge-patch+json, application/json-patch+json or "
                         "application/strategic-merge-patch+json");
}

Result<json> ApplyPatch(const json& target, const json& patch, PatchType type) {
  switch (type) {
    case PatchType::kMerge: {
      if (!patch.is_object()) return InvalidArgument("patch: a merge patch must be an object");
      json out = target;
      out.merge_patch(patch);
      return out;
    }
    case PatchType::kJson: {
      if (!patch.is_array()) return InvalidArgument("patch: a JSON patch must be a list");
      try {
        return target.patch(patch);
      } catch (const json::exception& e) {
        return InvalidArgument(std::string("patch: ") + e.what());
      }
    }
    case PatchType::kStrategicMerge: {
      if (!patch.is_object()) {
        return InvalidArgument("patch: a strategic merge patch must be an object");
      }
      Result<std::optional<json>> m = MergeMap(target, patch, "");
      if (!m.ok()) return m.status();
      if (!*m) return InvalidArgument("patch: $patch: delete of the whole object");
      return std::move(**m);
    }
    case PatchType::kApply:
      break;
  }
  return InvalidArgument("patch: not a patch ApplyPatch takes");
}

}  // namespace tessera::api
