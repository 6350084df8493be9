#include "api/patch.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/fields.h"
#include "api/json_read.h"
#include "api/json_text.h"

namespace tessera::api {

using nlohmann::json;

namespace {

constexpr std::string_view kOrderPrefix = "$setElementOrder/";
constexpr std::string_view kDeletePrimitivePrefix = "$deleteFromPrimitiveList/";

// Lists of scalars whose patch strategy is merge (their union is kept).
bool MergesPrimitives(std::string_view field) { return field == "finalizers"; }

// A value's identity for hashing: its compact JSON text (equal values, equal texts).
std::string Identity(const json& value) { return value.dump(); }

// The identity of `element`'s merge key, or nullopt when it is not an object holding the key.
std::optional<std::string> KeyOf(const json& element, const std::string& key) {
  if (!element.is_object()) return std::nullopt;
  const auto it = element.find(key);
  if (it == element.end()) return std::nullopt;
  return Identity(*it);
}

Result<std::optional<json>> MergeMap(json original, const json& patch, const std::string& path);

// An object's "$patch" directive: its text, "" when there is none, and "?" when it is not a
// string (which no directive is).
std::string Directive(const json& o) {
  if (!o.is_object()) return "";
  const auto it = o.find("$patch");
  if (it == o.end()) return "";
  return it->is_string() ? it->get<std::string>() : "?";
}

// Merges a list of objects on `key`; `patch` is the patch's list for the field. The original's
// elements are found by their key's identity in a hash table: linear in both lists.
Result<json> MergeList(json original, const json& patch, const std::string& key,
                       const std::string& path) {
  for (const json& e : patch) {
    if (e.is_object() && e.size() == 1 && Directive(e) == "replace") {
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
  // The elements, nullopt once deleted; each key's live elements, first first.
  std::vector<std::optional<json>> items;
  std::unordered_map<std::string, std::vector<size_t>> where;
  if (original.is_array()) {
    items.reserve(original.size());
    for (json& e : original) {
      if (auto k = KeyOf(e, key)) where[*k].push_back(items.size());
      items.emplace_back(std::move(e));
    }
  }
  for (size_t i = 0; i < patch.size(); ++i) {
    const json& e = patch[i];
    const std::string at = path + "[" + std::to_string(i) + "]";
    std::optional<std::string> k = KeyOf(e, key);
    if (!k) return FieldError(at, "must be an object with the merge key \"" + key + "\"");
    auto found = where.find(*k);
    if (Directive(e) == "delete") {
      if (found != where.end()) {
        for (size_t x : found->second) items[x].reset();
        where.erase(found);
      }
      continue;
    }
    const bool held = found != where.end() && !found->second.empty();
    const size_t first = held ? found->second.front() : items.size();
    Result<std::optional<json>> m =
        MergeMap(held ? std::move(*items[first]) : json::object(), e, at);
    if (!m.ok()) return m.status();
    if (!held) {
      if (*m) {
        where[*k].push_back(items.size());
        items.emplace_back(std::move(**m));
      }
    } else if (*m) {
      items[first] = std::move(**m);
    } else {
      items[first].reset();
      found->second.erase(found->second.begin());
    }
  }
  json out = json::array();
  for (std::optional<json>& e : items) {
    if (e) out.push_back(std::move(*e));
  }
  return out;
}

// Puts the elements `order` names first, in its order; the others keep theirs after them.
// Elements are matched on `key` (on their whole value when empty), each used once.
json Reorder(json list, const json& order, std::string_view key) {
  if (!list.is_array() || !order.is_array()) return list;
  const std::string k(key);
  auto identity = [&](const json& x) -> std::optional<std::string> {
    return key.empty() ? std::optional<std::string>(Identity(x)) : KeyOf(x, k);
  };
  // Each identity's unused elements, first first (`next` counts those used).
  struct Bucket {
    std::vector<size_t> at;
    size_t next = 0;
  };
  std::unordered_map<std::string, Bucket> buckets;
  for (size_t i = 0; i < list.size(); ++i) {
    if (auto id = identity(list[i])) buckets[*id].at.push_back(i);
  }
  json out = json::array();
  std::vector<bool> used(list.size(), false);
  for (const json& o : order) {
    const std::optional<std::string> id = identity(o);
    if (!id) continue;
    auto b = buckets.find(*id);
    if (b == buckets.end() || b->second.next == b->second.at.size()) continue;
    const size_t i = b->second.at[b->second.next++];
    used[i] = true;
    out.push_back(std::move(list[i]));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (!used[i]) out.push_back(std::move(list[i]));
  }
  return out;
}

// The identities of a list's elements.
std::unordered_set<std::string> Identities(const json& list) {
  std::unordered_set<std::string> out;
  for (const json& x : list) out.insert(Identity(x));
  return out;
}

// The strategic merge of `patch` into `original`; nullopt when the patch deletes the map.
Result<std::optional<json>> MergeMap(json original, const json& patch, const std::string& path) {
  if (!patch.is_object()) return std::optional<json>(patch);
  if (!original.is_object()) original = json::object();
  const std::string directive = Directive(patch);
  if (directive == "delete") return std::optional<json>();
  if (directive == "replace") original = json::object();
  if (!directive.empty() && directive != "replace" && directive != "merge") {
    return FieldError(path.empty() ? "$patch" : path + ".$patch",
                      directive == "?"
                          ? "must be a string: replace, delete or merge"
                          : "unknown directive \"" + directive + "\" (replace, delete or merge)");
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
    // The original's value, taken out (merged in place, without a copy).
    auto take = [&](json absent) {
      const auto it = original.find(k);
      return it == original.end() ? absent : std::move(*it);
    };
    if (v.is_object()) {
      Result<std::optional<json>> m = MergeMap(take(json::object()), v, at);
      if (!m.ok()) return m.status();
      if (*m) {
        original[k] = std::move(**m);
      } else {
        original.erase(k);
      }
    } else if (v.is_array() && !key.empty()) {
      Result<json> m = MergeList(take(json::array()), v, std::string(key), at);
      if (!m.ok()) return m.status();
      original[k] = std::move(*m);
    } else if (v.is_array() && MergesPrimitives(k) && original.contains(k) &&
               original[k].is_array()) {
      std::unordered_set<std::string> held = Identities(original[k]);
      for (const json& x : v) {
        if (held.insert(Identity(x)).second) original[k].push_back(x);
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
      const std::unordered_set<std::string> gone = Identities(v);
      json& list = original[field];
      list.erase(std::remove_if(list.begin(), list.end(),
                                [&](const json& x) { return gone.contains(Identity(x)); }),
                 list.end());
    } else if (k.starts_with(kOrderPrefix)) {
      const std::string field = k.substr(kOrderPrefix.size());
      if (original.contains(field)) {
        original[field] = Reorder(std::move(original[field]), v, StrategicMergeKey(field));
      }
    }
  }
  if (const auto retain = patch.find("$retainKeys"); retain != patch.end()) {
    if (!retain->is_array()) {
      return FieldError(path.empty() ? "$retainKeys" : path + ".$retainKeys", "must be a list");
    }
    std::unordered_set<std::string> keep;
    for (const json& x : *retain) {
      if (x.is_string()) keep.insert(x.get<std::string>());
    }
    for (auto it = original.begin(); it != original.end();) {
      if (!keep.contains(it.key())) {
        it = original.erase(it);
      } else {
        ++it;
      }
    }
  }
  return std::optional<json>(std::move(original));
}

// RFC 6902 on `doc` in place, within the bounds of patch.h: the result's size is followed as it
// grows (an upper bound, made exact when it passes the limit), and each operation's copying is
// counted against the work bound.
class JsonPatcher {
 public:
  explicit JsonPatcher(json doc) : doc_(std::move(doc)) {
    size_ = JsonTextSize(doc_, SIZE_MAX, &depth_);
  }

  Result<json> Run(const json& ops) {
    if (ops.size() > kMaxJsonPatchOperations) {
      return TooLarge("patch: " + std::to_string(ops.size()) +
                      " operations; a JSON patch may have at most " +
                      std::to_string(kMaxJsonPatchOperations));
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      at_ = "patch[" + std::to_string(i) + "]";
      TESSERA_RETURN_IF_ERROR(Operation(ops[i]));
    }
    return std::move(doc_);
  }

 private:
  Status Operation(const json& op) {
    if (!op.is_object()) return FieldError(at_, "must be an object");
    const json& op_name = Member(op, "op");
    const std::string name = op_name.is_string() ? op_name.get<std::string>() : "";
    Result<json::json_pointer> path = Pointer(op, "path");
    if (!path.ok()) return path.status();
    auto value = [&]() -> Result<const json*> {
      const auto v = op.find("value");
      if (v == op.end()) return FieldError(at_ + ".value", "is required for " + name);
      return &*v;
    };
    if (name == "add" || name == "replace" || name == "test") {
      Result<const json*> v = value();
      if (!v.ok()) return v.status();
      if (name == "test") {
        Result<json*> got = Existing(*path, "path");
        if (!got.ok()) return got.status();
        TESSERA_RETURN_IF_ERROR(Spend(JsonTextSize(**v)));
        if (**got != **v) return FieldError(at_, "test failed: the value differs");
        return Status::Ok();
      }
      if (name == "replace") {
        Result<json*> got = Existing(*path, "path");
        if (!got.ok()) return got.status();
      }
      return Add(*path, **v, name == "replace");
    }
    if (name == "remove") {
      Result<json*> got = Existing(*path, "path");
      if (!got.ok()) return got.status();
      return Remove(*path);
    }
    if (name == "move" || name == "copy") {
      Result<json::json_pointer> from = Pointer(op, "from");
      if (!from.ok()) return from.status();
      Result<json*> source = Existing(*from, "from");
      if (!source.ok()) return source.status();
      if (name == "move") {
        const std::string f = from->to_string(), p = path->to_string();
        if (p.size() > f.size() && p.starts_with(f) && p[f.size()] == '/') {
          return FieldError(at_ + ".from", "may not be a parent of path");
        }
        if (f == p) return Status::Ok();
        json moved = std::move(**source);
        TESSERA_RETURN_IF_ERROR(Remove(*from));
        return Put(*path, std::move(moved), false, 0);
      }
      int depth = 0;
      const size_t bytes = JsonTextSize(**source, kMaxObjectBytes, &depth);
      if (bytes > kMaxObjectBytes) return Grown(bytes);
      TESSERA_RETURN_IF_ERROR(Spend(bytes));
      return Put(*path, json(**source), false, depth, bytes);
    }
    return FieldError(at_ + ".op", "\"" + api::SafeText(name, 64) +
                                       "\" is not add, remove, replace, move, copy or test");
  }

  Result<json::json_pointer> Pointer(const json& op, const char* field) {
    const auto it = op.find(field);
    if (it == op.end() || !it->is_string()) {
      return FieldError(at_ + "." + field, "must be a JSON pointer string");
    }
    try {
      return json::json_pointer(it->get<std::string>());
    } catch (const json::exception& e) {
      return FieldError(at_ + "." + field, e.what());
    }
  }

  Result<json*> Existing(const json::json_pointer& p, const char* field) {
    try {
      if (doc_.contains(p)) return &doc_.at(p);
    } catch (const json::exception&) {
    }
    return FieldError(at_ + "." + field,
                      "\"" + api::SafeText(p.to_string(), 200) + "\" does not exist");
  }

  Status Add(const json::json_pointer& p, const json& v, bool replace) {
    int depth = 0;
    const size_t bytes = JsonTextSize(v, kMaxObjectBytes, &depth);
    if (bytes > kMaxObjectBytes) return Grown(bytes);
    TESSERA_RETURN_IF_ERROR(Spend(bytes));
    return Put(p, json(v), replace, depth, bytes);
  }

  // Puts `v` (`bytes` of text, `depth` deep) at `p`: in an object, sets the member; in a list,
  // inserts before the index (or appends for "-"), or sets it when `replace`.
  Status Put(const json::json_pointer& p, json v, bool replace, int depth, size_t bytes = 0) {
    if (p.empty()) {
      doc_ = std::move(v);
      size_ = JsonTextSize(doc_, SIZE_MAX, &depth_);
      return Status::Ok();
    }
    const json::json_pointer parent_at = p.parent_pointer();
    Result<json*> parent = Existing(parent_at, "path");
    if (!parent.ok()) return parent.status();
    int parent_depth = 0;
    for (json::json_pointer q = parent_at; !q.empty(); q = q.parent_pointer()) ++parent_depth;
    if (parent_depth + 1 + depth > kMaxPatchDepth) {
      return TooLarge(at_ + ": the object would nest deeper than " +
                      std::to_string(kMaxPatchDepth) + " levels");
    }
    const std::string& last = p.back();
    json& into = **parent;
    if (into.is_object()) {
      into[last] = std::move(v);
    } else if (into.is_array()) {
      const size_t n = into.size();
      size_t index = n;
      if (last != "-") {
        if (last.empty() || last.size() > 9 || !std::all_of(last.begin(), last.end(), ::isdigit) ||
            (last.size() > 1 && last[0] == '0')) {
          return FieldError(at_ + ".path", "\"" + api::SafeText(last, 64) + "\" is not an index");
        }
        index = std::stoul(last);
      }
      if (replace ? index >= n : index > n) {
        return FieldError(at_ + ".path", "index " + last + " is out of range");
      }
      if (replace) {
        into[index] = std::move(v);
      } else {
        into.insert(into.begin() + static_cast<ptrdiff_t>(index), std::move(v));
      }
    } else {
      return FieldError(at_ + ".path", "the parent is neither an object nor a list");
    }
    // The size only grows by what was added (a replaced value's going is not subtracted): when
    // the bound passes the limit, the exact size is counted.
    size_ += bytes + last.size() + 4;
    if (size_ > kMaxObjectBytes) {
      TESSERA_RETURN_IF_ERROR(Spend(size_));
      size_ = JsonTextSize(doc_, kMaxObjectBytes);
      if (size_ > kMaxObjectBytes) return Grown(size_);
    }
    return Status::Ok();
  }

  Status Remove(const json::json_pointer& p) {
    if (p.empty()) {
      doc_ = json();
      size_ = 4;
      return Status::Ok();
    }
    json& parent = doc_.at(p.parent_pointer());
    if (parent.is_object()) {
      parent.erase(p.back());
    } else {
      const std::string& last = p.back();
      if (last == "-" || last.empty() || !std::all_of(last.begin(), last.end(), ::isdigit)) {
        return FieldError(at_ + ".path", "\"" + api::SafeText(last, 64) + "\" is not an index");
      }
      parent.erase(static_cast<size_t>(std::stoul(last)));
    }
    return Status::Ok();
  }

  Status Spend(size_t bytes) {
    work_ += bytes;
    if (work_ > kMaxPatchWorkBytes) {
      return TooLarge(at_ + ": the patch copies more than " + std::to_string(kMaxPatchWorkBytes) +
                      " bytes; split it");
    }
    return Status::Ok();
  }

  Status Grown(size_t bytes) {
    return TooLarge(at_ + ": the patched object would be over " + std::to_string(bytes) +
                    " bytes, past " + std::to_string(kMaxObjectBytes) + " (the object size limit)");
  }

  json doc_;
  size_t size_ = 0;
  int depth_ = 0;
  size_t work_ = 0;
  std::string at_;
};

void CountText(const json& v, size_t limit, int level, size_t* total, int* deepest) {
  if (*total > limit || level > kMaxPatchDepth) {
    *deepest = std::max(*deepest, level);
    return;
  }
  switch (v.type()) {
    case json::value_t::object:
      *deepest = std::max(*deepest, level + 1);
      *total += 2;
      for (auto it = v.begin(); it != v.end() && *total <= limit; ++it) {
        *total += it.key().size() + 4;  // quotes, colon, comma
        CountText(it.value(), limit, level + 1, total, deepest);
      }
      break;
    case json::value_t::array:
      *deepest = std::max(*deepest, level + 1);
      *total += 2;
      for (auto it = v.begin(); it != v.end() && *total <= limit; ++it) {
        *total += 1;
        CountText(*it, limit, level + 1, total, deepest);
      }
      break;
    case json::value_t::string:
      *total += v.get_ref<const std::string&>().size() + 2;
      break;
    case json::value_t::number_float:
      *total += 24;
      break;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      *total += 20;
      break;
    case json::value_t::boolean:
      *total += 5;
      break;
    default:
      *total += 4;
  }
}

}  // namespace

size_t JsonTextSize(const json& value, size_t limit, int* depth) {
  size_t total = 0;
  int deepest = 0;
  CountText(value, limit, 0, &total, &deepest);
  if (depth != nullptr) *depth = deepest;
  return total;
}

Status CheckObjectBounds(const json& value, std::string_view what) {
  int depth = 0;
  if (JsonTextSize(value, kMaxObjectBytes, &depth) > kMaxObjectBytes) {
    return TooLarge(std::string(what) + " passes " + std::to_string(kMaxObjectBytes) +
                    " bytes (the object size limit)");
  }
  if (depth > kMaxPatchDepth) {
    return TooLarge(std::string(what) + " nests deeper than " + std::to_string(kMaxPatchDepth) +
                    " levels");
  }
  return Status::Ok();
}

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
      TESSERA_RETURN_IF_ERROR(CheckObjectBounds(out, "patch: the patched object"));
      return out;
    }
    case PatchType::kJson: {
      if (!patch.is_array()) return InvalidArgument("patch: a JSON patch must be a list");
      Result<json> out = JsonPatcher(target).Run(patch);
      if (out.ok()) TESSERA_RETURN_IF_ERROR(CheckObjectBounds(*out, "patch: the patched object"));
      return out;
    }
    case PatchType::kStrategicMerge: {
      if (!patch.is_object()) {
        return InvalidArgument("patch: a strategic merge patch must be an object");
      }
      Result<std::optional<json>> m = MergeMap(target, patch, "");
      if (!m.ok()) return m.status();
      if (!*m) return InvalidArgument("patch: $patch: delete of the whole object");
      TESSERA_RETURN_IF_ERROR(CheckObjectBounds(**m, "patch: the patched object"));
      return std::move(**m);
    }
    case PatchType::kApply:
      break;
  }
  return InvalidArgument("patch: not a patch ApplyPatch takes");
}

}  // namespace tessera::api
