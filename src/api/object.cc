#include "api/object.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <vector>

#include "api/fields.h"

namespace tessera::api {

using nlohmann::json;

const std::vector<KindInfo>& Kinds() {
  static const std::vector<KindInfo> kinds = {
      {"Job", "jobs", true, ""},
      {"PodGroup", "podgroups", true, "pg"},
      {"Event", "events", true, ""},
      {"LocalQueue", "localqueues", true, "lq"},
      {"NamespaceQuota", "namespacequotas", true, "nsq"},
      {"Queue", "queues", false, ""},
      {"Cohort", "cohorts", false, ""},
      {"ResourceFlavor", "resourceflavors", false, "rf"},
      {"PriorityClass", "priorityclasses", false, ""},
      {"Namespace", "namespaces", false, ""},
      {"Node", "nodes", false, ""},
      {"Lease", "leases", false, ""},
      {"GpuSharingConfig", "gpusharingconfigs", false, "gsc"},
  };
  return kinds;
}

const KindInfo* FindKind(std::string_view kind) {
  for (const KindInfo& k : Kinds()) {
    if (k.kind == kind) return &k;
  }
  return nullptr;
}

const KindInfo* FindKindByPlural(std::string_view plural) {
  for (const KindInfo& k : Kinds()) {
    if (k.plural == plural) return &k;
  }
  return nullptr;
}

namespace {

// As Kubernetes: the keys and values of an object's annotations, added up.
constexpr size_t kMaxAnnotationBytes = 256 * 1024;

Status Bad(std::string_view path, std::string_view what) {
  return InvalidArgument(std::string(path) + ": " + std::string(what));
}

std::string KnownKinds() {
  std::string out;
  for (const KindInfo& k : Kinds()) out += (out.empty() ? "" : ", ") + std::string(k.kind);
  return out;
}

// Label and annotation keys: an optional DNS subdomain prefix and '/', then a name of at most 63
// alphanumerics, '-', '_' or '.', starting and ending alphanumeric.
bool ValidKey(std::string_view key) {
  const size_t slash = key.rfind('/');
  if (slash != std::string_view::npos && !ValidateName(key.substr(0, slash), false, "").ok()) {
    return false;
  }
  const std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  if (name.empty() || name.size() > 63) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

Status ValidateStringMap(const json& m, std::string_view path, bool label_values) {
  if (!m.is_object()) return Bad(path, "must be a map of strings");
  for (const auto& [k, v] : m.items()) {
    const std::string p = std::string(path) + "." + k;
    if (!ValidKey(k)) return Bad(p, "invalid key");
    if (!v.is_string()) return Bad(p, "must be a string");
    if (label_values) {
      const std::string& s = v.get_ref<const std::string&>();
      if (s.size() > 63) return Bad(p, "label values are at most 63 characters");
      if (!s.empty() && !ValidKey(s)) return Bad(p, "invalid label value \"" + s + "\"");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateName(std::string_view value, bool label, std::string_view path) {
  const size_t max = label ? 63 : 253;
  if (value.empty()) return Bad(path, "must not be empty");
  if (value.size() > max) {
    return Bad(path, "must be at most " + std::to_string(max) + " characters, got " +
                         std::to_string(value.size()));
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  const bool chars_ok = std::all_of(value.begin(), value.end(), [&](char c) {
    return alnum(c) || c == '-' || (!label && c == '.');
  });
  // Each dot-separated part starts and ends with a letter or digit: no "..", ".-" or "-.".
  bool parts_ok = true;
  for (size_t i = 0; i + 1 < value.size(); ++i) {
    if ((value[i] == '.' && !alnum(value[i + 1])) || (value[i + 1] == '.' && !alnum(value[i]))) {
      parts_ok = false;
    }
  }
  if (!chars_ok || !parts_ok || !alnum(value.front()) || !alnum(value.back())) {
    return Bad(path, "\"" + SafeText(value, 300) + "\" is not a valid " +
                         (label ? "DNS-1123 label" : "DNS-1123 subdomain") +
                         " (lowercase letters, digits, '-'" + (label ? "" : ", '.'") +
                         "; starting and ending with a letter or digit)");
  }
  return Status::Ok();
}

Status ValidateEnvelope(const json& obj) {
  if (!obj.is_object()) return Bad("body", "must be a JSON object");
  static const std::vector<std::string_view> kTop = {"apiVersion", "kind", "metadata", "spec",
                                                     "status"};
  for (const auto& [k, v] : obj.items()) {
    if (std::find(kTop.begin(), kTop.end(), k) == kTop.end()) return UnknownField(k, k, kTop);
  }
  const auto api = obj.find("apiVersion");
  if (api == obj.end() || !api->is_string()) return Bad("apiVersion", "must be a string");
  if (*api != kApiVersion) {
    return Bad("apiVersion",
               "must be " + std::string(kApiVersion) + ", got \"" + api->get<std::string>() + "\"");
  }
  const auto kind = obj.find("kind");
  if (kind == obj.end() || !kind->is_string()) return Bad("kind", "must be a string");
  const KindInfo* info = FindKind(kind->get_ref<const std::string&>());
  if (info == nullptr) {
    return Bad("kind",
               "unknown kind \"" + kind->get<std::string>() + "\" (known: " + KnownKinds() + ")");
  }
  const auto meta = obj.find("metadata");
  if (meta == obj.end() || !meta->is_object()) return Bad("metadata", "must be an object");
  static const std::vector<std::string_view> kMeta = {
      "name", "namespace",         "labels",    "annotations", "resourceVersion",
      "uid",  "creationTimestamp", "generation"};
  for (const auto& [k, v] : meta->items()) {
    if (std::find(kMeta.begin(), kMeta.end(), k) == kMeta.end()) {
      return UnknownField("metadata." + k, k, kMeta);
    }
  }
  const auto name = meta->find("name");
  if (name == meta->end() || !name->is_string()) return Bad("metadata.name", "must be a string");
  if (Status s = ValidateName(name->get_ref<const std::string&>(), false, "metadata.name");
      !s.ok()) {
    return s;
  }
  const auto ns = meta->find("namespace");
  if (info->namespaced) {
    if (ns == meta->end() || !ns->is_string()) {
      return Bad("metadata.namespace",
                 "must be set: " + std::string(info->kind) + " is a namespaced kind");
    }
    if (Status s = ValidateName(ns->get_ref<const std::string&>(), true, "metadata.namespace");
        !s.ok()) {
      return s;
    }
  } else if (ns != meta->end() && !(ns->is_string() && ns->get_ref<const std::string&>().empty())) {
    return Bad("metadata.namespace",
               "must not be set: " + std::string(info->kind) + " is cluster-scoped");
  }
  if (const auto rv = meta->find("resourceVersion");
      rv != meta->end() && !(rv->is_string() && !rv->get_ref<const std::string&>().empty() &&
                             std::all_of(rv->get_ref<const std::string&>().begin(),
                                         rv->get_ref<const std::string&>().end(),
                                         [](char c) { return c >= '0' && c <= '9'; }) &&
                             rv->get_ref<const std::string&>().size() <= 18)) {
    return Bad("metadata.resourceVersion", "must be a string of digits");
  }
  if (const auto uid = meta->find("uid");
      uid != meta->end() &&
      !(uid->is_string() && uid->get_ref<const std::string&>().size() <= 128)) {
    return Bad("metadata.uid", "must be a string of at most 128 characters");
  }
  if (const auto gen = meta->find("generation");
      gen != meta->end() && !(gen->is_number_integer() && gen->get<int64_t>() >= 0 &&
                              !(gen->is_number_unsigned() && gen->get<uint64_t>() > INT64_MAX))) {
    return Bad("metadata.generation", "must be a non-negative integer");
  }
  if (const auto ct = meta->find("creationTimestamp");
      ct != meta->end() && !ct->is_null() &&
      !(ct->is_string() && ct->get_ref<const std::string&>().size() <= 64)) {
    return Bad("metadata.creationTimestamp", "must be an RFC 3339 time");
  }
  if (const auto l = meta->find("labels"); l != meta->end()) {
    if (Status s = ValidateStringMap(*l, "metadata.labels", true); !s.ok()) return s;
  }
  if (const auto a = meta->find("annotations"); a != meta->end()) {
    if (Status s = ValidateStringMap(*a, "metadata.annotations", false); !s.ok()) return s;
    size_t total = 0;
    for (const auto& [k, v] : a->items())
      total += k.size() + v.get_ref<const std::string&>().size();
    if (total > kMaxAnnotationBytes) {
      return Bad("metadata.annotations", "may hold at most " + std::to_string(kMaxAnnotationBytes) +
                                             " bytes in all, got " + std::to_string(total));
    }
  }
  if (const auto spec = obj.find("spec"); spec != obj.end() && !spec->is_object()) {
    return Bad("spec", "must be an object");
  }
  return Status::Ok();
}

ObjectId IdOf(const json& obj) {
  ObjectId id;
  id.kind = FindKind(obj.at("kind").get_ref<const std::string&>());
  const json& meta = obj.at("metadata");
  id.name = meta.at("name").get<std::string>();
  if (id.kind->namespaced) id.ns = meta.at("namespace").get<std::string>();
  return id;
}

Result<LabelSelector> LabelSelector::Parse(std::string_view text) {
  LabelSelector sel;
  auto trim = [](std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
  };
  auto valid_value = [](const std::string& v) {
    return v.empty() || (v.size() <= 63 && ValidKey(v) && v.find('/') == std::string::npos);
  };
  while (!text.empty()) {
    // Terms are split at the commas outside a set's parentheses.
    size_t comma = 0;
    for (int depth = 0; comma < text.size(); ++comma) {
      if (text[comma] == '(') ++depth;
      if (text[comma] == ')') --depth;
      if (text[comma] == ',' && depth == 0) break;
    }
    std::string_view term = text.substr(0, comma);
    text = comma >= text.size() ? std::string_view() : text.substr(comma + 1);
    term = trim(term);
    if (term.empty()) return InvalidArgument("labelSelector: empty term");
    Term t;
    size_t at;
    if (const size_t open = term.find('(');
        open != std::string_view::npos && term.find('=') == std::string_view::npos) {
      // Set-based: "key in (a,b)", "key notin (a,b)".
      std::string_view head = trim(term.substr(0, open));
      const size_t space = head.rfind(' ');
      const std::string_view op =
          space == std::string_view::npos ? std::string_view() : head.substr(space + 1);
      if ((op != "in" && op != "notin") || term.back() != ')') {
        return InvalidArgument("labelSelector: \"" + SafeText(std::string(term), 300) +
                               "\": a set is written \"key in (a,b)\" or \"key notin (a,b)\"");
      }
      t = {std::string(trim(head.substr(0, space))), op == "in" ? Op::kIn : Op::kNotIn, "", {}};
      std::string_view values = term.substr(open + 1, term.size() - open - 2);
      while (true) {
        const size_t c = values.find(',');
        t.values.emplace_back(trim(values.substr(0, c)));
        if (!valid_value(t.values.back())) {
          return InvalidArgument("labelSelector: invalid value \"" +
                                 SafeText(t.values.back(), 300) + "\"");
        }
        if (c == std::string_view::npos) break;
        values.remove_prefix(c + 1);
      }
    } else if ((at = term.find("!=")) != std::string_view::npos) {
      t = {std::string(trim(term.substr(0, at))),
           Op::kNe,
           std::string(trim(term.substr(at + 2))),
           {}};
    } else if ((at = term.find("==")) != std::string_view::npos) {
      t = {std::string(trim(term.substr(0, at))),
           Op::kEq,
           std::string(trim(term.substr(at + 2))),
           {}};
    } else if ((at = term.find('=')) != std::string_view::npos) {
      t = {std::string(trim(term.substr(0, at))),
           Op::kEq,
           std::string(trim(term.substr(at + 1))),
           {}};
    } else if (term.front() == '!') {
      t = {std::string(trim(term.substr(1))), Op::kNotExists, "", {}};
    } else {
      t = {std::string(term), Op::kExists, "", {}};
    }
    if (!ValidKey(t.key)) {
      return InvalidArgument("labelSelector: invalid key \"" + SafeText(t.key, 300) + "\"");
    }
    if (!valid_value(t.value)) {
      return InvalidArgument("labelSelector: invalid value \"" + SafeText(t.value, 300) + "\"");
    }
    sel.terms_.push_back(std::move(t));
  }
  return sel;
}

Result<LabelSelector> LabelSelector::FromJson(const json& sel, const std::string& path) {
  if (!sel.is_object()) return InvalidArgument(path + ": must be a label selector");
  LabelSelector out;
  for (const auto& [k, v] : sel.items()) {
    if (k != "matchLabels" && k != "matchExpressions") {
      return InvalidArgument(path + "." + k + ": unknown field (matchLabels, matchExpressions)");
    }
  }
  if (const auto it = sel.find("matchLabels"); it != sel.end() && !it->is_null()) {
    if (!it->is_object()) return InvalidArgument(path + ".matchLabels: must be a map");
    for (const auto& [k, v] : it->items()) {
      if (!ValidKey(k) || !v.is_string()) {
        return InvalidArgument(path + ".matchLabels." + SafeText(k, 100) +
                               ": must be a label key with a string value");
      }
      out.terms_.push_back({k, Op::kEq, v.get<std::string>(), {}});
    }
  }
  if (const auto it = sel.find("matchExpressions"); it != sel.end() && !it->is_null()) {
    if (!it->is_array()) return InvalidArgument(path + ".matchExpressions: must be a list");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& e = (*it)[i];
      const std::string p = path + ".matchExpressions[" + std::to_string(i) + "]";
      if (!e.is_object() || !e.contains("key") || !e["key"].is_string() ||
          !ValidKey(e["key"].get<std::string>())) {
        return InvalidArgument(p + ".key: must be a label key");
      }
      const std::string op = e.contains("operator") && e["operator"].is_string()
                                 ? e["operator"].get<std::string>()
                                 : "";
      Term t{e["key"].get<std::string>(), Op::kIn, "", {}};
      if (op == "In" || op == "NotIn") {
        t.op = op == "In" ? Op::kIn : Op::kNotIn;
        const json& values = e.contains("values") ? e["values"] : json();
        if (!values.is_array() || values.empty()) {
          return InvalidArgument(p + ".values: must list values for " + op);
        }
        for (const json& v : values) {
          if (!v.is_string()) return InvalidArgument(p + ".values: must be strings");
          t.values.push_back(v.get<std::string>());
        }
      } else if (op == "Exists" || op == "DoesNotExist") {
        t.op = op == "Exists" ? Op::kExists : Op::kNotExists;
        if (e.contains("values") && !(e["values"].is_array() && e["values"].empty())) {
          return InvalidArgument(p + ".values: must be empty for " + op);
        }
      } else {
        return InvalidArgument(p + ".operator: must be In, NotIn, Exists or DoesNotExist");
      }
      out.terms_.push_back(std::move(t));
    }
  }
  return out;
}

bool LabelSelector::Matches(const json& labels) const {
  for (const Term& t : terms_) {
    const bool has = labels.is_object() && labels.contains(t.key) && labels.at(t.key).is_string();
    const std::string value = has ? labels.at(t.key).get<std::string>() : "";
    switch (t.op) {
      case Op::kIn:
        if (!has || std::find(t.values.begin(), t.values.end(), value) == t.values.end()) {
          return false;
        }
        break;
      case Op::kNotIn:
        if (has && std::find(t.values.begin(), t.values.end(), value) != t.values.end()) {
          return false;
        }
        break;
      case Op::kEq:
        if (!has || value != t.value) return false;
        break;
      case Op::kNe:
        if (has && value == t.value) return false;
        break;
      case Op::kExists:
        if (!has) return false;
        break;
      case Op::kNotExists:
        if (has) return false;
        break;
    }
  }
  return true;
}

std::string UuidText(uint64_t high, uint64_t low) {
  high = (high & 0xffffffffffff0fffULL) | 0x4000ULL;            // version 4
  low = (low & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 10
  char out[37];
  std::snprintf(out, sizeof out, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(high >> 32),
                static_cast<unsigned>((high >> 16) & 0xffff), static_cast<unsigned>(high & 0xffff),
                static_cast<unsigned>(low >> 48),
                static_cast<unsigned long long>(low & 0xffffffffffffULL));
  return out;
}

Result<FieldSelector> FieldSelector::Parse(std::string_view text,
                                           const std::vector<std::string_view>& supported) {
  FieldSelector sel;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view term = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    Term t;
    size_t at = term.find("!=");
    size_t skip = 2;
    if (at != std::string_view::npos) {
      t.equal = false;
    } else if ((at = term.find("==")) == std::string_view::npos) {
      at = term.find('=');
      skip = 1;
    }
    if (at == std::string_view::npos || at == 0) {
      return InvalidArgument("fieldSelector: \"" + SafeText(term, 300) +
                             "\" is not <field>=<value> or <field>!=<value>");
    }
    const std::string_view field = term.substr(0, at);
    if (std::find(supported.begin(), supported.end(), field) == supported.end()) {
      std::string known;
      for (std::string_view f : supported) known += (known.empty() ? "" : ", ") + std::string(f);
      return InvalidArgument("fieldSelector: field label not supported: " + SafeText(field, 300) +
                             " (supported: " + known + ")");
    }
    for (std::string_view rest = field; !rest.empty();) {
      const size_t dot = rest.find('.');
      t.path.emplace_back(rest.substr(0, dot));
      rest.remove_prefix(dot == std::string_view::npos ? rest.size() : dot + 1);
    }
    t.value = std::string(term.substr(at + skip));
    sel.terms_.push_back(std::move(t));
  }
  return sel;
}

bool FieldSelector::Matches(const json& obj) const {
  for (const Term& t : terms_) {
    const json* v = &obj;
    for (const std::string& key : t.path) {
      if (!v->is_object() || !v->contains(key)) {
        v = nullptr;
        break;
      }
      v = &(*v)[key];
    }
    std::string text;
    if (v != nullptr && v->is_string()) text = v->get<std::string>();
    if (v != nullptr && (v->is_number() || v->is_boolean())) text = v->dump();
    if ((text == t.value) != t.equal) return false;
  }
  return true;
}

json EventObject(const std::string& ns, const std::string& name, std::string_view type,
                 std::string_view reason, std::string_view message, const std::string& time,
                 std::string_view kind, std::string_view about) {
  return {{"apiVersion", kApiVersion},
          {"kind", "Event"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"creationTimestamp", time}}},
          {"spec",
           {{"type", type},
            {"reason", reason},
            {"message", message},
            {"time", time},
            {"involvedObject", {{"kind", kind}, {"name", about}}}}}};
}

}  // namespace tessera::api
