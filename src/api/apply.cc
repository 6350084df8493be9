#include "api/apply.h"

#include <algorithm>
#include <string>

#include "api/fields.h"
#include "api/json_text.h"
#include "api/patch.h"
#include "api/yaml.h"

namespace tessera::api {

using nlohmann::json;

namespace {

constexpr std::string_view kSelf = ".";

// The metadata fields the server owns.
bool ServerMeta(std::string_view k) {
  for (std::string_view s :
       {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
        "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields"}) {
    if (k == s) return true;
  }
  return false;
}

// Whether `key` of `obj` (at `depth`, 0 being the object) is nobody's field.
bool Ignored(size_t depth, const FieldPath& parent, std::string_view key) {
  if (depth == 0) return key == "apiVersion" || key == "kind" || key == "status";
  return depth == 1 && parent.size() == 1 && parent[0] == "f:metadata" && ServerMeta(key);
}

// The key `list` (the value of field `field`) is merged on, or "" when it is atomic: lists
// Kubernetes merges on a key whose items all carry it, once each.
std::string ListKey(std::string_view field, const json& list) {
  std::string key(StrategicMergeKey(field));
  if (key.empty() || !list.is_array()) return "";
  std::vector<json> seen;
  for (const json& item : list) {
    if (!item.is_object() || !item.contains(key)) return "";
    if (std::find(seen.begin(), seen.end(), item[key]) != seen.end()) return "";
    seen.push_back(item[key]);
  }
  return key;
}

std::string ItemElement(const std::string& key, const json& value) {
  return "k:" + json{{key, value}}.dump();
}

void Walk(const json& v, std::string_view field, FieldPath* path, FieldSet* out) {
  if (v.is_object() && !v.empty()) {
    for (const auto& [k, child] : v.items()) {
      if (Ignored(path->size(), *path, k)) continue;
      path->push_back("f:" + k);
      Walk(child, k, path, out);
      path->pop_back();
    }
    return;
  }
  if (v.is_array() && !path->empty()) {
    if (const std::string key = ListKey(field, v); !key.empty()) {
      for (const json& item : v) {
        path->push_back(ItemElement(key, item[key]));
        path->push_back(std::string(kSelf));
        out->insert(*path);
        path->pop_back();
        Walk(item, "", path, out);
        path->pop_back();
      }
      return;
    }
  }
  if (!path->empty()) out->insert(*path);
}

// The field name an element names ("f:spec" -> "spec"), "" for others.
std::string_view FieldName(std::string_view element) {
  return element.starts_with("f:") ? element.substr(2) : std::string_view();
}

// The item of `list` an element "k:{...}" names.
json* FindItem(json& list, std::string_view element) {
  if (!list.is_array() || !element.starts_with("k:")) return nullptr;
  const json keys = json::parse(element.substr(2), nullptr, false);
  if (!keys.is_object()) return nullptr;
  for (json& item : list) {
    if (!item.is_object()) continue;
    bool all = true;
    for (const auto& [k, value] : keys.items()) all = all && item.contains(k) && item[k] == value;
    if (all) return &item;
  }
  return nullptr;
}

// The value at `path` in `obj`, or null when absent.
const json* ValueAt(const json& obj, const FieldPath& path) {
  json* at = const_cast<json*>(&obj);
  for (const std::string& e : path) {
    if (e == kSelf) break;
    if (std::string_view f = FieldName(e); !f.empty()) {
      if (!at->is_object() || !at->contains(f)) return nullptr;
      at = &(*at)[std::string(f)];
    } else {
      at = FindItem(*at, e);
      if (at == nullptr) return nullptr;
    }
  }
  return at;
}

// Removes the field at path[i...] from `node`; true when the removal left `node` an empty map
// or list (its parent removes it in turn).
bool RemoveAt(json& node, const FieldPath& path, size_t i) {
  const std::string& e = path[i];
  const bool last = i + 1 == path.size() || path[i + 1] == kSelf;
  if (std::string_view f = FieldName(e); !f.empty()) {
    if (!node.is_object()) return false;
    auto it = node.find(f);
    if (it == node.end()) return false;
    if (last || RemoveAt(*it, path, i + 1)) node.erase(it);
    return node.empty();
  }
  json* item = FindItem(node, e);
  if (item == nullptr) return false;
  if (!last) {
    RemoveAt(*item, path, i + 1);
    return false;
  }
  node.erase(node.begin() + (item - &node[0]));
  return node.empty();
}

// Whether `p` is the key field of an item ("name" of k:{"name":...}): it goes with the item.
bool IsItemKey(const FieldPath& p) {
  if (p.size() < 2 || !p[p.size() - 2].starts_with("k:")) return false;
  const json keys = json::parse(p[p.size() - 2].substr(2), nullptr, false);
  return keys.is_object() && keys.contains(FieldName(p.back()));
}

bool IsPrefix(const FieldPath& prefix, const FieldPath& path) {
  return prefix.size() <= path.size() && std::equal(prefix.begin(), prefix.end(), path.begin());
}

// Whether someone in `managed` (but `except`) owns `p` or, for an item, anything in it.
bool OwnedByOthers(const std::vector<ManagedEntry>& managed, const ManagedEntry* except,
                   const FieldPath& p) {
  FieldPath scope = p;
  const bool item = !p.empty() && p.back() == kSelf;
  if (item) scope.pop_back();
  for (const ManagedEntry& m : managed) {
    if (&m == except) continue;
    if (!item) {
      if (m.fields.contains(p)) return true;
      continue;
    }
    auto it = m.fields.lower_bound(scope);
    if (it != m.fields.end() && IsPrefix(scope, *it)) return true;
  }
  return false;
}

// `config` merged into `live`: maps key by key, keyed lists item by item, the rest replaced.
json Merge(const json& live, const json& config, std::string_view field) {
  if (config.is_object() && live.is_object()) {
    json out = live;
    for (const auto& [k, v] : config.items()) {
      out[k] = out.contains(k) ? Merge(out[k], v, k) : v;
    }
    return out;
  }
  if (config.is_array() && live.is_array()) {
    const std::string key = ListKey(field, config);
    if (key.empty() || ListKey(field, live) != key) return config;
    json out = live;
    for (const json& item : config) {
      json* held = FindItem(out, ItemElement(key, item[key]));
      if (held == nullptr) {
        out.push_back(item);
      } else {
        *held = Merge(*held, item, "");
      }
    }
    return out;
  }
  return config;
}

std::string Printed(const FieldPath& p) {
  std::string out;
  for (const std::string& e : p) {
    if (e == kSelf) continue;
    if (std::string_view f = FieldName(e); !f.empty()) {
      out += "." + std::string(f);
      continue;
    }
    const json keys = json::parse(e.substr(2), nullptr, false);
    out += "[";
    bool first = true;
    for (const auto& [k, v] : keys.items()) {
      out += (first ? "" : ",") + k + "=" + v.dump();
      first = false;
    }
    out += "]";
  }
  return out;
}

json FieldsJson(const FieldSet& fields) {
  json out = json::object();
  for (const FieldPath& p : fields) {
    json* at = &out;
    for (const std::string& e : p) at = &(*at)[e];
    if (at->is_null()) *at = json::object();
  }
  return out;
}

Status ParseFields(const json& node, const std::string& where, FieldPath* path, FieldSet* out) {
  if (!node.is_object()) return FieldError(where, "must be an object");
  if (node.empty() && !path->empty()) {
    out->insert(*path);
    return Status::Ok();
  }
  for (const auto& [k, child] : node.items()) {
    const bool valid = k == kSelf ? !path->empty() && path->back().starts_with("k:")
                                  : k.starts_with("f:") || k.starts_with("k:");
    if (!valid) return FieldError(where, "\"" + k + "\" is not a fieldsV1 element Tessera takes");
    path->push_back(k);
    TESSERA_RETURN_IF_ERROR(ParseFields(child, where + "[" + json(k).dump() + "]", path, out));
    path->pop_back();
  }
  return Status::Ok();
}

ManagedEntry* Find(std::vector<ManagedEntry>& managed, std::string_view manager,
                   std::string_view operation) {
  for (ManagedEntry& m : managed) {
    if (m.manager == manager && m.operation == operation) return &m;
  }
  return nullptr;
}

void DropEmpty(std::vector<ManagedEntry>* managed) {
  std::erase_if(*managed, [](const ManagedEntry& m) { return m.fields.empty(); });
}

// Leaves each entry only the fields `obj` still has.
void KeepPresent(const FieldSet& present, std::vector<ManagedEntry>* managed) {
  for (ManagedEntry& m : *managed) {
    std::erase_if(m.fields, [&](const FieldPath& p) { return !present.contains(p); });
  }
}

}  // namespace

FieldSet FieldsOf(const json& obj) {
  FieldSet out;
  FieldPath path;
  if (obj.is_object()) Walk(obj, "", &path, &out);
  return out;
}

json ManagedFieldsJson(const std::vector<ManagedEntry>& managed) {
  json out = json::array();
  for (const ManagedEntry& m : managed) {
    out.push_back({{"manager", m.manager},
                   {"operation", m.operation},
                   {"apiVersion", m.api_version},
                   {"time", m.time},
                   {"fieldsType", "FieldsV1"},
                   {"fieldsV1", FieldsJson(m.fields)}});
  }
  return out;
}

Result<std::vector<ManagedEntry>> ParseManagedFields(const json& list) {
  if (!list.is_array()) return FieldError("metadata.managedFields", "must be a list");
  std::vector<ManagedEntry> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = "metadata.managedFields[" + std::to_string(i) + "]";
    Fields f(list[i], at, false);
    ManagedEntry m;
    std::string type;
    int operation = 0;
    TESSERA_RETURN_IF_ERROR(f.String("manager", &m.manager, true));
    TESSERA_RETURN_IF_ERROR(f.Enum("operation", {"Apply", "Update"}, &operation));
    m.operation = operation == 0 ? "Apply" : "Update";
    TESSERA_RETURN_IF_ERROR(f.String("apiVersion", &m.api_version));
    TESSERA_RETURN_IF_ERROR(f.String("time", &m.time));
    TESSERA_RETURN_IF_ERROR(f.String("fieldsType", &type));
    if (!type.empty() && type != "FieldsV1") {
      return FieldError(f.At("fieldsType"), "must be FieldsV1");
    }
    FieldPath path;
    if (const json* fields = f.Get("fieldsV1"); fields != nullptr) {
      TESSERA_RETURN_IF_ERROR(ParseFields(*fields, f.At("fieldsV1"), &path, &m.fields));
    }
    f.Get("subresource");
    TESSERA_RETURN_IF_ERROR(f.Finish());
    out.push_back(std::move(m));
  }
  return out;
}

Applied Apply(const json& live, const json& config, const std::vector<ManagedEntry>& managed,
              std::string_view manager, std::string_view api_version, std::string_view time,
              bool force) {
  Applied out;
  out.managed = managed;
  const FieldSet intent = FieldsOf(config);
  const json base = live.is_object() ? live : json::object();
  // Fields another manager owns with another value.
  for (ManagedEntry& m : out.managed) {
    // Managers are (name, operation): an applier's own updates are another's fields.
    if (m.manager == manager && m.operation == "Apply") continue;
    std::vector<FieldPath> taken;
    for (const FieldPath& p : intent) {
      if (!m.fields.contains(p) || p.back() == kSelf) continue;
      const json* now = ValueAt(base, p);
      const json* wanted = ValueAt(config, p);
      if (now == nullptr || wanted == nullptr || *now == *wanted) continue;
      out.conflicts.push_back({m.manager, m.api_version, Printed(p)});
      taken.push_back(p);
    }
    if (force) {
      for (const FieldPath& p : taken) m.fields.erase(p);
    }
  }
  if (force) out.conflicts.clear();
  if (!out.conflicts.empty()) return out;
  out.object = Merge(base, config, "");
  // What this manager applied before and applies no more goes, unless someone else holds it.
  ManagedEntry* mine = Find(out.managed, manager, "Apply");
  if (mine != nullptr) {
    for (const FieldPath& p : mine->fields) {
      if (intent.contains(p) || IsItemKey(p) || OwnedByOthers(out.managed, mine, p)) continue;
      RemoveAt(out.object, p, 0);
    }
  } else {
    out.managed.push_back({std::string(manager), "Apply", "", "", {}});
    mine = &out.managed.back();
  }
  // An apply that changes nothing leaves the entry as it was (its time too).
  if (mine->fields != intent || mine->api_version != api_version || out.object != base) {
    mine->fields = intent;
    mine->api_version = api_version;
    mine->time = time;
  }
  KeepPresent(FieldsOf(out.object), &out.managed);
  DropEmpty(&out.managed);
  return out;
}

std::vector<ManagedEntry> RecordUpdate(const json& before, const json& after,
                                       std::vector<ManagedEntry> managed, std::string_view manager,
                                       std::string_view api_version, std::string_view time) {
  const FieldSet now = FieldsOf(after);
  FieldSet changed;
  for (const FieldPath& p : now) {
    const json* was = before.is_object() ? ValueAt(before, p) : nullptr;
    if (was == nullptr || (p.back() != kSelf && *was != *ValueAt(after, p))) changed.insert(p);
  }
  KeepPresent(now, &managed);
  for (ManagedEntry& m : managed) {
    for (const FieldPath& p : changed) m.fields.erase(p);
  }
  if (!changed.empty()) {
    ManagedEntry* mine = Find(managed, manager, "Update");
    if (mine == nullptr) {
      managed.push_back({std::string(manager), "Update", "", "", {}});
      mine = &managed.back();
    }
    mine->fields.insert(changed.begin(), changed.end());
    mine->api_version = api_version;
    mine->time = time;
  }
  DropEmpty(&managed);
  return managed;
}

Result<json> ParseApplyConfiguration(std::string_view body) {
  const size_t first = body.find_first_not_of(" \t\r\n");
  Result<json> doc = json();
  if (first != std::string_view::npos && body[first] == '{') {
    doc = ParseJson(body);
  } else {
    auto docs = ParseYamlDocuments(body);
    if (!docs.ok()) return docs.status();
    if (docs->size() != 1) return InvalidArgument("body: an apply patch is one object");
    doc = std::move((*docs)[0]);
  }
  if (!doc.ok()) return doc.status();
  if (!doc->is_object()) return InvalidArgument("body: an apply patch must be an object");
  return doc;
}

std::string ConflictMessage(const std::vector<FieldConflict>& conflicts) {
  std::string out = "Apply failed with " + std::to_string(conflicts.size()) +
                    (conflicts.size() == 1 ? " conflict:" : " conflicts:");
  for (const FieldConflict& c : conflicts) {
    out += (conflicts.size() == 1 ? " " : "\n- ");
    out += "conflict with \"" + c.manager + "\"";
    if (!c.api_version.empty()) out += " using " + c.api_version;
    out += ": " + c.field;
  }
  return out;
}

std::string DefaultManager(std::string_view user_agent) {
  std::string out(user_agent.substr(0, user_agent.find('/')));
  std::erase_if(out, [](char c) { return c < 0x20 || c > 0x7e; });
  if (out.size() > 128) out.resize(128);
  return out.empty() ? "unknown" : out;
}

Status ValidateManager(std::string_view name) {
  if (name.empty() || name.size() > 128) {
    return FieldError("fieldManager", "must be 1 to 128 characters long");
  }
  for (char c : name) {
    if (c < 0x20 || c > 0x7e) return FieldError("fieldManager", "must be printable ASCII");
  }
  return Status::Ok();
}

}  // namespace tessera::api
