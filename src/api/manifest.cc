#include "api/manifest.h"

#include <yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>

#include "api/fields.h"
#include "api/json_text.h"
#include "api/kinds.h"
#include "api/kube_fields.h"
#include "api/kube_kinds.h"
#include "api/object.h"
#include "api/pod_failure_policy.h"
#include "api/quantity.h"
#include "api/resources.h"

namespace tessera::api {

using nlohmann::json;

namespace {

constexpr int kMaxYamlDepth = 64;
constexpr int64_t kMaxYamlNodes = 1'000'000;
// What a manifest may expand to (aliases make a small text large) and the longest one value.
constexpr int64_t kMaxYamlBytes = 32 << 20;
constexpr size_t kMaxYamlString = 256 << 10;

// ---- YAML to JSON ---------------------------------------------------------------------------

// YAML 1.2 core schema: [-+]?[0-9]+ is an integer.
bool IsYamlInt(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// YAML 1.2 core schema: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? is a float.
bool IsYamlFloat(std::string_view s) {
  auto digits = [&](size_t i) {
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    return j;
  };
  size_t i = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i < s.size() && s[i] == '.') {
    const size_t j = digits(i + 1);
    if (j == i + 1) return false;
    i = j;
  } else {
    const size_t j = digits(i);
    if (j == i) return false;
    i = j;
    if (i < s.size() && s[i] == '.') i = digits(i + 1);
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    const size_t j = digits(i);
    if (j == i) return false;
    i = j;
  }
  return i == s.size();
}

json PlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (IsYamlInt(s)) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0) return static_cast<int64_t>(v);
    return s;  // out of range: left as text, reported where a number is expected
  }
  if (IsYamlFloat(s)) {
    const double d = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(d)) return d;
  }
  return s;
}

// YAML text to JSON values on libyaml's event parser (yaml-cpp 0.7's loader allocates without
// end on some inputs, valid or not, e.g. `"",`). Bounded: nesting, nodes and bytes produced
// (aliases count each time they are used), the length of one value, UTF-8.
class Loader {
 public:
  explicit Loader(std::string_view text) : text_(text) {
    ok_ = yaml_parser_initialize(&parser_) != 0;
    if (ok_) {
      yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                   text.size());
    }
  }
  ~Loader() {
    if (ok_) yaml_parser_delete(&parser_);
  }
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  Result<std::vector<json>> Documents() {
    if (!ok_) return Internal("YAML: cannot start the parser");
    std::vector<json> out;
    Event e;
    TESSERA_RETURN_IF_ERROR(Next(&e));  // stream start
    for (;;) {
      TESSERA_RETURN_IF_ERROR(Next(&e));
      if (e.get().type == YAML_STREAM_END_EVENT) return out;
      if (e.get().type != YAML_DOCUMENT_START_EVENT) return InvalidArgument("YAML: malformed");
      anchors_.clear();  // anchors are per document
      TESSERA_RETURN_IF_ERROR(Next(&e));
      Result<Value> v = Node(e, 0);
      if (!v.ok()) return v.status();
      out.push_back(std::move(v->value));
      TESSERA_RETURN_IF_ERROR(Next(&e));  // document end
    }
  }

 private:
  // One event, deleted when it goes or is replaced.
  class Event {
   public:
    Event() = default;
    ~Event() { Reset(); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    yaml_event_t& get() { return event_; }
    yaml_event_t* Fresh() {
      Reset();
      return &event_;
    }
    void Taken() { held_ = true; }

   private:
    void Reset() {
      if (held_) yaml_event_delete(&event_);
      held_ = false;
    }
    yaml_event_t event_{};
    bool held_ = false;
  };
  struct Value {
    json value;
    int64_t nodes = 0;
    int64_t bytes = 0;
  };

  Status Next(Event* e) {
    yaml_event_t* raw = e->Fresh();
    if (yaml_parser_parse(&parser_, raw) == 0) {
      if (parser_.error == YAML_READER_ERROR) {
        // Bytes that are not text: the reader knows the offset, not the line.
        const size_t at = std::min(parser_.problem_offset, text_.size());
        const auto line =
            std::count(text_.begin(), text_.begin() + static_cast<ptrdiff_t>(at), '\n');
        return InvalidArgument(
            "YAML: text that is not UTF-8 (line " + std::to_string(line + 1) +
            "): " + SafeText(parser_.problem != nullptr ? parser_.problem : "", 100));
      }
      return InvalidArgument(
          "YAML: " + SafeText(parser_.problem != nullptr ? parser_.problem : "malformed", 200) +
          (parser_.context != nullptr ? std::string(" ") + SafeText(parser_.context, 100) : "") +
          " (line " + std::to_string(parser_.problem_mark.line + 1) + ", column " +
          std::to_string(parser_.problem_mark.column + 1) + ")");
    }
    e->Taken();
    return Status::Ok();
  }

  static std::string Line(const yaml_event_t& e) {
    return " (line " + std::to_string(e.start_mark.line + 1) + ")";
  }

  // Counts `nodes` and `bytes` more of output; an error past a budget.
  Status Produce(int64_t nodes, int64_t bytes, const yaml_event_t& at) {
    nodes_ += nodes;
    bytes_ += bytes;
    if (nodes_ > kMaxYamlNodes) {
      return InvalidArgument("YAML: more than 1000000 nodes (after expanding aliases)" + Line(at));
    }
    if (bytes_ > kMaxYamlBytes) {
      return InvalidArgument("YAML: more than " + std::to_string(kMaxYamlBytes >> 20) +
                             " MiB of content (after expanding aliases)" + Line(at));
    }
    return Status::Ok();
  }

  // A scalar's text: UTF-8 and within the string limit.
  static Result<std::string> Text(const yaml_event_t& e) {
    const size_t n = e.data.scalar.length;
    if (n > kMaxYamlString) {
      return InvalidArgument("YAML: a value of " + std::to_string(n) +
                             " bytes is longer than the limit of " +
                             std::to_string(kMaxYamlString) + Line(e));
    }
    std::string s(reinterpret_cast<const char*>(e.data.scalar.value), n);
    if (!ValidUtf8(s)) return InvalidArgument("YAML: text that is not UTF-8" + Line(e));
    return s;
  }

  // The node that starts with `e` (read already); its events are consumed.
  Result<Value> Node(Event& e, int depth) {
    const yaml_event_t& ev = e.get();
    if (depth > kMaxYamlDepth) {
      return InvalidArgument("YAML: nested deeper than " + std::to_string(kMaxYamlDepth) +
                             " levels" + Line(ev));
    }
    Value out;
    std::string anchor;
    switch (ev.type) {
      case YAML_ALIAS_EVENT: {
        const std::string name(reinterpret_cast<const char*>(ev.data.alias.anchor));
        auto it = anchors_.find(name);
        if (it == anchors_.end()) {
          return InvalidArgument("YAML: unknown anchor \"" + SafeText(name, 64) + "\"" + Line(ev));
        }
        TESSERA_RETURN_IF_ERROR(Produce(it->second.nodes, it->second.bytes, ev));
        return it->second;
      }
      case YAML_SCALAR_EVENT: {
        if (ev.data.scalar.anchor != nullptr) {
          anchor = reinterpret_cast<const char*>(ev.data.scalar.anchor);
        }
        Result<std::string> text = Text(ev);
        if (!text.ok()) return text.status();
        out.nodes = 1;
        out.bytes = static_cast<int64_t>(text->size()) + 16;
        TESSERA_RETURN_IF_ERROR(Produce(out.nodes, out.bytes, ev));
        // Quoted and block scalars, and plain ones tagged !!str, are strings; other plain
        // scalars are typed by the core schema.
        const char* tag = reinterpret_cast<const char*>(ev.data.scalar.tag);
        const bool text_only = ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
                               (tag != nullptr && std::string_view(tag) == YAML_STR_TAG);
        out.value = text_only ? json(*text) : PlainScalar(*text);
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        const bool map = ev.type == YAML_MAPPING_START_EVENT;
        const yaml_char_t* a = map ? ev.data.mapping_start.anchor : ev.data.sequence_start.anchor;
        if (a != nullptr) anchor = reinterpret_cast<const char*>(a);
        const std::string line = Line(ev);
        out.nodes = 1;
        out.bytes = 16;
        TESSERA_RETURN_IF_ERROR(Produce(1, 16, ev));
        out.value = map ? json::object() : json::array();
        for (;;) {
          TESSERA_RETURN_IF_ERROR(Next(&e));
          const yaml_event_type_t t = e.get().type;
          if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) break;
          std::string key;
          if (map) {
            if (t != YAML_SCALAR_EVENT) {
              return InvalidArgument("YAML: a map key must be a scalar" + Line(e.get()));
            }
            Result<std::string> k = Text(e.get());
            if (!k.ok()) return k.status();
            key = std::move(k).value();
            TESSERA_RETURN_IF_ERROR(Produce(0, static_cast<int64_t>(key.size()), e.get()));
            out.bytes += static_cast<int64_t>(key.size());
            if (out.value.contains(key)) {
              return InvalidArgument("YAML: duplicate key \"" + SafeText(key, 64) + "\"" +
                                     Line(e.get()));
            }
            TESSERA_RETURN_IF_ERROR(Next(&e));
          }
          Result<Value> item = Node(e, depth + 1);
          if (!item.ok()) return item.status();
          out.nodes += item->nodes;
          out.bytes += item->bytes;
          if (map) {
            out.value[key] = std::move(item->value);
          } else {
            out.value.push_back(std::move(item->value));
          }
        }
        break;
      }
      default:
        return InvalidArgument("YAML: malformed" + Line(ev));
    }
    if (!anchor.empty()) anchors_[anchor] = out;
    return out;
  }

  std::string_view text_;
  yaml_parser_t parser_{};
  bool ok_ = false;
  std::map<std::string, Value> anchors_;
  int64_t nodes_ = 0;
  int64_t bytes_ = 0;
};

// ---- helpers --------------------------------------------------------------------------------

json Object(std::string_view kind, const std::string& name, const std::string& ns,
            const json& labels, const json& annotations, json spec) {
  json meta = {{"name", name}};
  if (!ns.empty()) meta["namespace"] = ns;
  if (labels.is_object() && !labels.empty()) meta["labels"] = labels;
  if (annotations.is_object() && !annotations.empty()) meta["annotations"] = annotations;
  return {{"apiVersion", kApiVersion}, {"kind", kind}, {"metadata", meta}, {"spec", spec}};
}

const json kEmpty = json::object();

using Warnings = std::vector<std::string>;

const json& Member(const json& obj, const char* key) {
  if (!obj.is_object()) return kEmpty;
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? kEmpty : *it;
}

std::string Text(const json& obj, const char* key) {
  const json& v = Member(obj, key);
  return v.is_string() ? v.get<std::string>() : "";
}

// Checks that `obj` has no fields beyond `allowed`; `why` says what to do about the others.
Status OnlyFields(const json& obj, const std::string& path,
                  std::initializer_list<const char*> allowed, std::string_view why) {
  if (!obj.is_object()) return obj.is_null() ? Status::Ok() : FieldError(path, "must be an object");
  for (const auto& [k, v] : obj.items()) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) return FieldError(path.empty() ? k : path + "." + k, why);
  }
  return Status::Ok();
}

constexpr std::string_view kNotRun = "not supported: Tessera does not act on it";

// Sums a resource over containers: "cpu" and "memory" add up; any other resource may be set by
// one container only.
Status AddResources(const json& list, const std::string& path, json* sum) {
  if (list.is_null()) return Status::Ok();
  if (!list.is_object()) return FieldError(path, "must be a map of quantities");
  for (const auto& [name, value] : list.items()) {
    const std::string p = path + "." + name;
    if (!value.is_string() && !value.is_number()) return FieldError(p, "must be a quantity");
    if (!sum->contains(name)) {
      (*sum)[name] = value;
      continue;
    }
    if (name != "cpu" && name != "memory" && name != "ephemeral-storage") {
      return FieldError(p, "set by two containers; one container of a pod may request it");
    }
    auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    Result<Quantity> a = ParseQuantity(text((*sum)[name]), p);
    Result<Quantity> b = ParseQuantity(text(value), p);
    if (!a.ok()) return a.status();
    if (!b.ok()) return b.status();
    const __int128 total = a->nano + b->nano;
    if (total > std::numeric_limits<int64_t>::max() || total < 0) return FieldError(p, "is absurd");
    (*sum)[name] = std::to_string(static_cast<int64_t>(total)) + "n";
  }
  return Status::Ok();
}

// What a pod template's translation knows besides its spec.
struct PodContext {
  std::string ns;
  const json* meta = nullptr;  // the pod's (or template's) metadata
  bool bare_pod = false;       // a v1 Pod: metadata.name is the pod's own name
  std::string pod_name;        // for a bare pod
  Warnings* warnings = nullptr;
};

// securityContext: runAsUser and runAsGroup onto the task; runAsNonRoot checked against them.
Status RunAs(const json& context, const std::string& path, json* task, Warnings* warnings) {
  if (context.is_null()) return Status::Ok();
  TESSERA_RETURN_IF_ERROR(KnownFields(context, path, KubeFieldsOf("SecurityContext"), warnings));
  for (const char* k : {"runAsUser", "runAsGroup"}) {
    if (!context.contains(k)) continue;
    const json& v = context[k];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 2147483646) {
      return FieldError(path + "." + k, "must be an id from 0 to 2147483646");
    }
    (*task)[k] = v;
  }
  const json non_root = context.contains("runAsNonRoot") ? context["runAsNonRoot"] : json();
  if (!non_root.is_null() && !non_root.is_boolean()) {
    return FieldError(path + ".runAsNonRoot", "must be true or false");
  }
  if (non_root == true) {
    const json& uid = Member(*task, "runAsUser");
    if (uid == 0) {
      return FieldError(path + ".runAsNonRoot", "is true but runAsUser is 0 (root)");
    }
    if (!uid.is_number()) {
      warnings->push_back(path +
                          ".runAsNonRoot: without runAsUser the task runs as the node "
                          "agent's user, which may be root");
    }
  }
  return Status::Ok();
}

// A resourceFieldRef's value: the container's limit or request divided by the divisor,
// rounded up (Kubernetes' rule); empty with a warning when the container does not set it.
Result<std::string> ResourceFieldValue(const json& ref, const json& resources,
                                       const std::string& path, Warnings* warnings) {
  TESSERA_RETURN_IF_ERROR(OnlyFields(ref, path, {"containerName", "resource", "divisor"},
                                     "unknown field of a resourceFieldRef"));
  const std::string resource = Text(ref, "resource");
  const size_t dot = resource.find('.');
  const std::string which = resource.substr(0, dot);
  if (dot == std::string::npos || (which != "limits" && which != "requests")) {
    return FieldError(path + ".resource",
                      "must be limits.<resource> or requests.<resource>, got \"" + resource + "\"");
  }
  const json& v = Member(Member(resources, which.c_str()), resource.substr(dot + 1).c_str());
  if (!v.is_string() && !v.is_number()) {
    warnings->push_back(path + ": the container sets no " + resource + "; the variable is not set");
    return std::string();
  }
  Result<Quantity> q = ParseQuantity(v.is_string() ? v.get<std::string>() : v.dump(), path);
  if (!q.ok()) return q.status();
  const json& d = Member(ref, "divisor");
  Quantity divisor{1'000'000'000};
  if (d.is_string() || d.is_number()) {
    Result<Quantity> dq =
        ParseQuantity(d.is_string() ? d.get<std::string>() : d.dump(), path + ".divisor");
    if (!dq.ok()) return dq.status();
    if (dq->nano <= 0) return FieldError(path + ".divisor", "must be positive");
    divisor = *dq;
  }
  const __int128 n = (q->nano + divisor.nano - 1) / divisor.nano;
  return std::to_string(static_cast<int64_t>(n));
}

// One env entry's value from valueFrom: fields known when translating are resolved now; the
// pod's name, node and address are left to the agent (task.fieldEnv); ConfigMaps and Secrets,
// which Tessera does not have, leave the variable unset with a warning. False when unset.
Status EnvFrom(const json& from, const std::string& path, const std::string& var,
               const json& resources, const PodContext& ctx, json* env, json* field_env) {
  TESSERA_RETURN_IF_ERROR(KnownFields(from, path, KubeFieldsOf("EnvVarSource"), ctx.warnings));
  if (const json& ref = Member(from, "fieldRef"); !ref.empty()) {
    const std::string fp = Text(ref, "fieldPath");
    const std::string at = path + ".fieldRef.fieldPath";
    auto keyed = [&](std::string_view prefix) -> std::optional<std::string> {
      if (!fp.starts_with(prefix) || !fp.ends_with("']")) return std::nullopt;
      return fp.substr(prefix.size(), fp.size() - prefix.size() - 2);
    };
    if (fp == "metadata.namespace") {
      (*env)[var] = ctx.ns;
    } else if (fp == "metadata.name" && ctx.bare_pod) {
      (*env)[var] = ctx.pod_name;
    } else if (fp == "metadata.name" || fp == "spec.nodeName" || fp == "status.hostIP" ||
               fp == "status.hostIPs" || fp == "status.podIP" || fp == "status.podIPs") {
      (*field_env)[var] = fp;
    } else if (fp == "metadata.annotations['batch.kubernetes.io/job-completion-index']" ||
               fp == "metadata.labels['batch.kubernetes.io/job-completion-index']") {
      (*field_env)[var] = "completionIndex";  // an Indexed Job's, known when the pod starts
    } else if (fp == "spec.serviceAccountName") {
      (*env)[var] = "default";
    } else if (auto k = keyed("metadata.labels['")) {
      (*env)[var] = Text(Member(*ctx.meta, "labels"), k->c_str());
    } else if (auto a = keyed("metadata.annotations['")) {
      (*env)[var] = Text(Member(*ctx.meta, "annotations"), a->c_str());
    } else if (fp == "metadata.uid") {
      ctx.warnings->push_back(at + ": Tessera objects have no uid; the variable is not set");
    } else {
      return FieldError(at, "\"" + fp +
                                "\" is not a field a pod can read (metadata.name, "
                                "metadata.namespace, metadata.labels['key'], "
                                "metadata.annotations['key'], spec.nodeName, "
                                "spec.serviceAccountName, status.hostIP, status.podIP)");
    }
    return Status::Ok();
  }
  if (const json& ref = Member(from, "resourceFieldRef"); !ref.empty()) {
    Result<std::string> v =
        ResourceFieldValue(ref, resources, path + ".resourceFieldRef", ctx.warnings);
    if (!v.ok()) return v.status();
    if (!v->empty()) (*env)[var] = *v;
  }
  return Status::Ok();
}

// The container's ports, as environment: TESSERA_PORT_<NAME> per named port and TESSERA_PORTS
// listing them all (a process binds them on the node itself).
Status Ports(const json& ports, const std::string& path, json* env, Warnings* warnings) {
  if (ports.empty()) return Status::Ok();
  if (!ports.is_array()) return FieldError(path, "must be a list");
  std::string all;
  for (size_t i = 0; i < ports.size(); ++i) {
    const std::string p = Index(path, i);
    TESSERA_RETURN_IF_ERROR(KnownFields(ports[i], p, KubeFieldsOf("ContainerPort"), warnings));
    const json& port = Member(ports[i], "containerPort");
    if (!port.is_number_integer() || port.get<int64_t>() < 1 || port.get<int64_t>() > 65535) {
      return FieldError(p + ".containerPort", "must be a port number from 1 to 65535");
    }
    const json& host = Member(ports[i], "hostPort");
    if (!host.empty() && host != port) {
      warnings->push_back(p + ".hostPort: not acted on: the task listens on containerPort " +
                          port.dump() + " itself");
    }
    all += (all.empty() ? "" : ",") + port.dump();
    if (const std::string name = Text(ports[i], "name"); !name.empty()) {
      (*env)["TESSERA_PORT_" + EnvVarSuffix(name)] = port.dump();
    }
  }
  if (!all.empty()) (*env)["TESSERA_PORTS"] = all;
  return Status::Ok();
}

// The pod's volumes as the first container mounts them: hostPath and emptyDir are provided
// (task.volumes); other kinds are not, with a warning.
Status Volumes(const json& pod, const json& container, const std::string& path,
               const std::string& cpath, bool process, json* task, Warnings* warnings) {
  const json& volumes = Member(pod, "volumes");
  if (!volumes.is_array() && !volumes.empty())
    return FieldError(path + ".volumes", "must be a list");
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; volumes.is_array() && i < volumes.size(); ++i) {
    const std::string name = Text(volumes[i], "name");
    if (name.empty()) return FieldError(Index(path + ".volumes", i) + ".name", "must be set");
    if (!by_name.emplace(name, i).second) {
      return FieldError(Index(path + ".volumes", i) + ".name", "duplicate volume \"" + name + "\"");
    }
  }
  const json& mounts = Member(container, "volumeMounts");
  if (!mounts.is_array() && !mounts.empty()) {
    return FieldError(cpath + ".volumeMounts", "must be a list");
  }
  json out = json::array();
  for (size_t i = 0; mounts.is_array() && i < mounts.size(); ++i) {
    const std::string mp = Index(cpath + ".volumeMounts", i);
    TESSERA_RETURN_IF_ERROR(KnownFields(mounts[i], mp, KubeFieldsOf("VolumeMount"), warnings));
    const std::string name = Text(mounts[i], "name"), mount_path = Text(mounts[i], "mountPath");
    auto v = by_name.find(name);
    if (v == by_name.end())
      return FieldError(mp + ".name", "no volume \"" + name + "\" in the pod");
    if (mount_path.empty() || mount_path[0] != '/') {
      return FieldError(mp + ".mountPath", "must be an absolute path");
    }
    const json& vol = volumes[v->second];
    const std::string vp = Index(path + ".volumes", v->second);
    json m = {{"name", name}, {"mountPath", mount_path}};
    if (Member(mounts[i], "readOnly") == true) m["readOnly"] = true;
    const std::string env = "$TESSERA_VOLUME_" + EnvVarSuffix(name);
    if (const json& hp = Member(vol, "hostPath"); !hp.empty()) {
      const std::string host = Text(hp, "path");
      if (host.empty() || host[0] != '/') {
        return FieldError(vp + ".hostPath.path", "must be an absolute path");
      }
      m["hostPath"] = host;
      if (!Text(hp, "type").empty()) {
        warnings->push_back(vp + ".hostPath.type: not acted on: the path is used as it is");
      }
      if (process && host != mount_path) {
        warnings->push_back(mp + ": a process sees the node's files: " + host + " is not at " +
                            mount_path + " (its path is in " + env + ")");
      }
    } else if (vol.contains("emptyDir")) {
      m["emptyDir"] = true;
      if (!Member(vol, "emptyDir").empty()) {
        warnings->push_back(vp +
                            ".emptyDir: not acted on: medium and sizeLimit (a directory on "
                            "the node's disk)");
      }
      if (process) {
        warnings->push_back(mp + ": a process gets a scratch directory for it, not at " +
                            mount_path + " (its path is in " + env + ")");
      }
    } else {
      std::string kind = "unknown";
      for (const auto& [k, x] : vol.items()) {
        if (k != "name") kind = k;
      }
      warnings->push_back(mp + ": not acted on: volumes of kind " + kind +
                          " are not provided (Tessera provides hostPath and emptyDir)");
      continue;
    }
    out.push_back(std::move(m));
  }
  if (!out.empty()) (*task)["volumes"] = std::move(out);
  return Status::Ok();
}

// Translates a pod template's spec into a task (without name and replicas) and the job-level
// fields it implies (priorityClassName, schedulingGates).
Status PodSpecToTask(const json& pod, const std::string& path, const PodContext& ctx, json* task,
                     json* job) {
  Warnings* warnings = ctx.warnings;
  TESSERA_RETURN_IF_ERROR(KnownFields(pod, path, KubeFieldsOf("PodSpec"), warnings));
  TESSERA_RETURN_IF_ERROR(
      RunAs(Member(pod, "securityContext"), path + ".securityContext", task, warnings));
  const json& containers = Member(pod, "containers");
  const std::string cpath = path + ".containers";
  if (!containers.is_array() || containers.empty()) {
    return FieldError(cpath, "must list at least one container");
  }
  json limits = json::object(), requests = json::object();
  json env = json::object(), field_env = json::object();
  for (size_t i = 0; i < containers.size(); ++i) {
    const json& c = containers[i];
    const std::string p = Index(cpath, i);
    TESSERA_RETURN_IF_ERROR(KnownFields(c, p, KubeFieldsOf("Container"), warnings));
    const json& res = Member(c, "resources");
    TESSERA_RETURN_IF_ERROR(
        KnownFields(res, p + ".resources", KubeFieldsOf("ResourceRequirements"), warnings));
    // Checked here too, so that errors name the field as the user wrote it.
    Fields rf(res, p + ".resources");
    ResourceList own_limits, own_requests;
    TESSERA_RETURN_IF_ERROR(rf.StringMap("limits", &own_limits, true));
    TESSERA_RETURN_IF_ERROR(rf.StringMap("requests", &own_requests, true));
    core::PodSpec probe;
    TESSERA_RETURN_IF_ERROR(
        ApplyContainerResources(own_limits, own_requests, p + ".resources", &probe));
    TESSERA_RETURN_IF_ERROR(AddResources(Member(res, "limits"), p + ".resources.limits", &limits));
    TESSERA_RETURN_IF_ERROR(
        AddResources(Member(res, "requests"), p + ".resources.requests", &requests));
    if (i > 0) {
      // Its requests count; it does not run.
      warnings->push_back(p + ": not acted on: Tessera runs the first container of a pod; " +
                          "container \"" + Text(c, "name") +
                          "\" is not run (its requests are counted)");
      continue;
    }
    // The container's user and group override the pod's, as in Kubernetes.
    TESSERA_RETURN_IF_ERROR(
        RunAs(Member(c, "securityContext"), p + ".securityContext", task, warnings));
    for (const char* k : {"image", "command", "args", "workingDir", "imagePullPolicy"}) {
      if (c.contains(k) && !c[k].is_null()) (*task)[k] = c[k];
    }
    TESSERA_RETURN_IF_ERROR(Ports(Member(c, "ports"), p + ".ports", &env, warnings));
    TESSERA_RETURN_IF_ERROR(Volumes(pod, c, path, p, !c.contains("image"), task, warnings));
    const json& e = Member(c, "env");
    if (!e.is_array() && !e.empty()) return FieldError(p + ".env", "must be a list");
    for (size_t k = 0; e.is_array() && k < e.size(); ++k) {
      const std::string ep = Index(p + ".env", k);
      TESSERA_RETURN_IF_ERROR(KnownFields(e[k], ep, KubeFieldsOf("EnvVar"), warnings));
      if (!Member(e[k], "name").is_string()) return FieldError(ep + ".name", "must be a string");
      const std::string var = Text(e[k], "name");
      if (const json& from = Member(e[k], "valueFrom"); !from.empty()) {
        TESSERA_RETURN_IF_ERROR(EnvFrom(from, ep + ".valueFrom", var, res, ctx, &env, &field_env));
      } else {
        env[var] = Member(e[k], "value").is_string() ? e[k]["value"] : json("");
      }
    }
  }
  json resources = json::object();
  if (!limits.empty()) resources["limits"] = limits;
  if (!requests.empty()) resources["requests"] = requests;
  if (!resources.empty()) (*task)["resources"] = resources;
  if (!env.empty()) (*task)["env"] = env;
  if (!field_env.empty()) (*task)["fieldEnv"] = field_env;
  for (const char* k :
       {"nodeSelector", "tolerations", "restartPolicy", "terminationGracePeriodSeconds"}) {
    if (pod.contains(k) && !pod[k].is_null()) (*task)[k] = pod[k];
  }
  if (const std::string node = Text(pod, "nodeName"); !node.empty()) {
    // Kubernetes binds such a pod to the node directly; here it is a selector on the node's
    // name (checked like any other).
    if (!(*task)["nodeSelector"].is_object()) (*task)["nodeSelector"] = json::object();
    (*task)["nodeSelector"]["kubernetes.io/hostname"] = node;
  }
  if (const json& affinity = Member(pod, "affinity"); !affinity.empty()) {
    TESSERA_RETURN_IF_ERROR(
        KnownFields(affinity, path + ".affinity", KubeFieldsOf("Affinity"), warnings));
    if (affinity.contains("nodeAffinity")) {
      (*task)["affinity"] = {{"nodeAffinity", affinity["nodeAffinity"]}};
    }
  }
  if (pod.contains("priorityClassName")) (*job)["priorityClassName"] = pod["priorityClassName"];
  if (const json& gates = Member(pod, "schedulingGates"); !gates.empty()) {
    if (!gates.is_array()) return FieldError(path + ".schedulingGates", "must be a list");
    json names = json::array();
    for (size_t i = 0; i < gates.size(); ++i) {
      const std::string gp = Index(path + ".schedulingGates", i);
      TESSERA_RETURN_IF_ERROR(OnlyFields(gates[i], gp, {"name"}, "unknown field"));
      if (Text(gates[i], "name").empty()) return FieldError(gp + ".name", "must be set");
      names.push_back(gates[i]["name"]);
    }
    (*job)["schedulingGates"] = names;
  }
  return Status::Ok();
}

// The queue a Kubernetes object names with the Kueue label, if any.
void QueueFromLabel(const json& meta, json* spec) {
  const std::string q = Text(Member(meta, "labels"), "kueue.x-k8s.io/queue-name");
  if (!q.empty()) (*spec)["queue"] = q;
}

// The PodGroup a pod joins (Volcano's annotation).
void GroupFromAnnotation(const json& meta, json* spec) {
  for (const char* key : {"scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name"}) {
    const std::string g = Text(Member(meta, "annotations"), key);
    if (!g.empty()) (*spec)["podGroup"] = g;
  }
}

struct Doc {
  std::string api, kind, name, ns;
  json meta;
};

void VolcanoQueue(const json& spec, json* out, json* annotations);

Result<std::vector<json>> Pod(const Doc& d, const json& doc, Warnings* warnings) {
  json job = json::object(), task = {{"name", "main"}, {"replicas", 1}};
  const PodContext ctx{d.ns, &d.meta, true, d.name, warnings};
  TESSERA_RETURN_IF_ERROR(PodSpecToTask(Member(doc, "spec"), "spec", ctx, &task, &job));
  const json& containers = doc["spec"]["containers"];
  if (containers[0].contains("name") && containers[0]["name"].is_string()) {
    task["name"] = containers[0]["name"];
  }
  if (!task.contains("restartPolicy")) task["restartPolicy"] = "Always";
  job["tasks"] = json::array({task});
  QueueFromLabel(d.meta, &job);
  GroupFromAnnotation(d.meta, &job);
  // Volcano's queue of a Pod (its annotation) when no Kueue label names one.
  json annotations = Member(d.meta, "annotations");
  const std::string volcano_queue = Text(annotations, "scheduling.volcano.sh/queue-name");
  if (!volcano_queue.empty() && !job.contains("queue")) {
    VolcanoQueue({{"queue", volcano_queue}}, &job, &annotations);
  }
  return std::vector<json>{Object("Job", d.name, d.ns, Member(d.meta, "labels"), annotations, job)};
}

// A Job's lifetime as Kubernetes (and Volcano and Kubeflow's runPolicy) write it: how long it
// may run once started (activeDeadlineSeconds) and be kept once finished
// (ttlSecondsAfterFinished). Tessera's Job takes both as they are (DecodeJob checks them).
void CopyLifetime(const json& from, json* job) {
  for (const char* k : {"activeDeadlineSeconds", "ttlSecondsAfterFinished"}) {
    if (from.is_object() && from.contains(k)) (*job)[k] = from[k];
  }
}

// Kubernetes' default selector, which the served Job carries and kubectl edit and replace send
// back: not a choice of the client's, so not warned of.
bool DefaultSelector(const json& spec) {
  const json& selector = Member(spec, "selector");
  const json& labels = Member(selector, "matchLabels");
  return selector.is_object() && selector.size() == 1 && labels.is_object() && labels.size() == 1 &&
         labels.contains("batch.kubernetes.io/controller-uid") &&
         Member(spec, "manualSelector") != true;
}

Result<std::vector<json>> BatchJob(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  if (DefaultSelector(spec)) {
    json rest = spec;
    rest.erase("selector");
    TESSERA_RETURN_IF_ERROR(KnownFields(rest, "spec", KubeFieldsOf("JobSpec"), warnings));
  } else {
    TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("JobSpec"), warnings));
  }
  json job = json::object(), task = {{"name", "main"}};
  CopyLifetime(spec, &job);
  const json& tmpl = Member(spec, "template");
  TESSERA_RETURN_IF_ERROR(
      KnownFields(tmpl, "spec.template", KubeFieldsOf("PodTemplateSpec"), warnings));
  const PodContext ctx{d.ns, &Member(tmpl, "metadata"), false, "", warnings};
  TESSERA_RETURN_IF_ERROR(
      PodSpecToTask(Member(tmpl, "spec"), "spec.template.spec", ctx, &task, &job));
  const json& par = Member(spec, "parallelism");
  const json& comp = Member(spec, "completions");
  task["replicas"] = par.is_number_integer() ? par : json(1);
  if (par == 0) {
    return FieldError("spec.parallelism",
                      "0 (a paused Job) is not supported: use spec.suspend to hold a Job");
  }
  const bool indexed = Member(spec, "completionMode") == "Indexed";
  if (indexed && !comp.is_number_integer()) {
    return FieldError("spec.completions", "is required when completionMode is Indexed");
  }
  if (indexed || (comp.is_number_integer() && comp != task["replicas"])) {
    // An array: completions tasks, parallelism at a time (never more than are left). A failed
    // index is retried as a new pod, as Kubernetes does with restartPolicy Never.
    if (comp.is_number_integer() && par.is_number_integer() && comp < par) {
      task["replicas"] = comp;
    }
    if (Text(task, "restartPolicy") == "OnFailure") {
      warnings->push_back(
          "spec.template.spec.restartPolicy: OnFailure runs as Never in an array: a failed "
          "index is retried as a new pod, counted against backoffLimit or backoffLimitPerIndex");
    }
    task["restartPolicy"] = "Never";
    for (const char* k : {"completions", "completionMode", "backoffLimit", "backoffLimitPerIndex",
                          "maxFailedIndexes"}) {
      if (spec.contains(k)) job[k] = spec[k];
    }
  } else {
    // Kubernetes' backoffLimit (default 6): failed attempts retried before the Job fails,
    // restarts (OnFailure) or new attempts (Never) alike.
    task["maxRetries"] = spec.contains("backoffLimit") ? spec["backoffLimit"] : json(6);
  }
  if (spec.contains("suspend")) job["suspend"] = spec["suspend"];
  if (const json& policy = Member(spec, "podFailurePolicy"); !policy.empty()) {
    auto checked = CheckPodFailurePolicy(
        policy, "spec.podFailurePolicy", Member(Member(tmpl, "spec"), "containers"),
        Text(Member(tmpl, "spec"), "restartPolicy"), "spec.template.spec.restartPolicy",
        Member(spec, "backoffLimitPerIndex").is_number_integer());
    if (!checked.ok()) return checked.status();
    task["podFailurePolicy"] = std::move(checked).value();
  }
  job["tasks"] = json::array({task});
  QueueFromLabel(d.meta, &job);
  return std::vector<json>{
      Object("Job", d.name, d.ns, Member(d.meta, "labels"), Member(d.meta, "annotations"), job)};
}

// Volcano's queue of a Job or PodGroup. Volcano's `default` queue always exists, is open to
// every namespace and has no capability: Tessera's work without a queue, recorded in the
// tessera.io/volcano-queue annotation. Another name is the queue (LocalQueue) of that name.
void VolcanoQueue(const json& spec, json* out, json* annotations) {
  const json& q = Member(spec, "queue");
  if (!q.is_string()) return;
  if (q == "default") {
    if (!annotations->is_object()) *annotations = json::object();
    (*annotations)["tessera.io/volcano-queue"] = "default";
    return;
  }
  (*out)["queue"] = q;
}

// Volcano's lifecycle policies ({event(s), action, exitCode, timeout}). Tessera re-queues a
// preempted or evicted gang whole (Volcano's PodEvicted -> RestartJob) and restarts a failed pod
// by its restartPolicy and maxRetry; any other policy is accepted with a warning.
Status VolcanoPolicies(const json& policies, const std::string& path, Warnings* warnings) {
  if (policies.empty()) return Status::Ok();
  if (!policies.is_array()) return FieldError(path, "must be a list");
  for (size_t i = 0; i < policies.size(); ++i) {
    const std::string p = Index(path, i);
    TESSERA_RETURN_IF_ERROR(KnownFields(policies[i], p, KubeFieldsOf("LifecyclePolicy"), warnings));
    std::vector<std::string> events;
    if (Member(policies[i], "event").is_string()) events.push_back(Text(policies[i], "event"));
    const json& list = Member(policies[i], "events");
    for (size_t k = 0; list.is_array() && k < list.size(); ++k) {
      if (list[k].is_string()) events.push_back(list[k].get<std::string>());
    }
    const std::string action = Text(policies[i], "action");
    if (events.size() == 1 && events[0] == "PodEvicted" && action == "RestartJob" &&
        !policies[i].contains("exitCode")) {
      continue;  // what Tessera does with an evicted gang
    }
    std::string what;
    for (const std::string& e : events) what += (what.empty() ? "" : ", ") + e;
    if (policies[i].contains("exitCode"))
      what += (what.empty() ? "" : ", ") + std::string("exit code");
    warnings->push_back(
        p + ": not acted on: " + (what.empty() ? "a policy" : what) + " -> " +
        (action.empty() ? "no action" : action) +
        "; Tessera re-queues an evicted gang whole and restarts a failed pod by its "
        "restartPolicy and maxRetry");
  }
  return Status::Ok();
}

// Volcano's JobSpec.
Result<std::vector<json>> VolcanoJob(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("VolcanoJobSpec"), warnings));
  TESSERA_RETURN_IF_ERROR(VolcanoPolicies(Member(spec, "policies"), "spec.policies", warnings));
  json job = json::object(), annotations = Member(d.meta, "annotations");
  CopyLifetime(spec, &job);
  if (spec.contains("minAvailable")) job["minMember"] = spec["minAvailable"];
  if (const json& estimate = Member(spec, "runningEstimate"); !estimate.empty()) {
    // Volcano's runtime hint (a duration, "2h"), which backfill uses.
    if (!estimate.is_string()) return FieldError("spec.runningEstimate", "must be a duration");
    auto ms = ParseDurationMs(estimate.get<std::string>(), "spec.runningEstimate", false);
    if (!ms.ok()) return ms.status();
    job["estimatedRuntimeSeconds"] = (*ms + 999) / 1000;
  }
  VolcanoQueue(spec, &job, &annotations);
  if (spec.contains("priorityClassName")) job["priorityClassName"] = spec["priorityClassName"];
  // Volcano's job plugins (ssh keys, headless service, env) set up the pods' network identity;
  // kept for the runner, not dropped.
  if (spec.contains("plugins")) {
    TESSERA_RETURN_IF_ERROR(
        OnlyFields(spec["plugins"], "spec.plugins", {"ssh", "svc", "env"},
                   "not supported: Tessera knows the ssh, svc and env plugins"));
    annotations["tessera.io/volcano-plugins"] = spec["plugins"].dump();
  }
  const json& tasks = Member(spec, "tasks");
  if (!tasks.is_array() || tasks.empty())
    return FieldError("spec.tasks", "must list at least one task");
  // Volcano's webhook gives a task without minAvailable its replicas, and a job without one the
  // sum of its tasks'; the scheduler holds each task to its own minimum only while the job's
  // minAvailable is at least that sum (JobInfo.CheckTaskValid).
  std::vector<int64_t> task_min(tasks.size(), 0);
  int64_t task_min_total = 0;
  bool any_task_min = false;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::string p = Index("spec.tasks", i);
    const json& replicas = Member(tasks[i], "replicas");
    const json& min = Member(tasks[i], "minAvailable");
    task_min[i] = replicas.is_number_integer() ? replicas.get<int64_t>() : 1;
    if (!min.empty()) {
      if (!min.is_number_integer() || min.get<int64_t>() < 0 || min.get<int64_t>() > task_min[i]) {
        return FieldError(p + ".minAvailable",
                          "must be an integer from 0 to the task's replicas (" +
                              std::to_string(task_min[i]) + ")");
      }
      task_min[i] = min.get<int64_t>();
      any_task_min = true;
    }
    task_min_total += task_min[i];
  }
  const json& job_min = Member(spec, "minAvailable");
  if (!job_min.empty() && !job_min.is_number_integer()) {
    return FieldError("spec.minAvailable", "must be an integer");
  }
  const int64_t job_min_value = job_min.empty() ? 0 : job_min.get<int64_t>();
  if (job_min_value == 0 && any_task_min) job["minMember"] = task_min_total;
  const bool per_task = any_task_min && (job_min_value == 0 || job_min_value >= task_min_total);
  json out = json::array();
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::string p = Index("spec.tasks", i);
    TESSERA_RETURN_IF_ERROR(KnownFields(tasks[i], p, KubeFieldsOf("VolcanoTaskSpec"), warnings));
    TESSERA_RETURN_IF_ERROR(
        VolcanoPolicies(Member(tasks[i], "policies"), p + ".policies", warnings));
    json task = {
        {"name", Member(tasks[i], "name").is_string() ? tasks[i]["name"]
                                                      : json("task" + std::to_string(i))},
        {"replicas", Member(tasks[i], "replicas").is_number() ? tasks[i]["replicas"] : json(1)}};
    const json& tmpl = Member(tasks[i], "template");
    TESSERA_RETURN_IF_ERROR(
        KnownFields(tmpl, p + ".template", KubeFieldsOf("PodTemplateSpec"), warnings));
    const PodContext ctx{d.ns, &Member(tmpl, "metadata"), false, "", warnings};
    TESSERA_RETURN_IF_ERROR(
        PodSpecToTask(Member(tmpl, "spec"), p + ".template.spec", ctx, &task, &job));
    const json& retry =
        tasks[i].contains("maxRetry") ? tasks[i]["maxRetry"] : Member(spec, "maxRetry");
    if (retry.is_number()) task["maxRetries"] = retry;
    if (per_task && task_min[i] > 0) task["minMember"] = task_min[i];
    out.push_back(task);
  }
  job["tasks"] = out;
  return std::vector<json>{Object("Job", d.name, d.ns, Member(d.meta, "labels"), annotations, job)};
}

// Kubeflow's PyTorchJob (kubeflow.org/v1): a Master and Workers, one gang (the training
// operator's schedulingPolicy.minAvailable, else the elastic minimum, else every replica).

// A Kubeflow job's runPolicy: its queue (schedulingPolicy.queue, else Kueue's label), priority
// class and suspend; what Tessera does not act on is warned.
Status KubeflowRunPolicy(const Doc& d, const json& run, json* job, json* annotations,
                         Warnings* warnings) {
  TESSERA_RETURN_IF_ERROR(KnownFields(run, "spec.runPolicy", KubeFieldsOf("RunPolicy"), warnings));
  QueueFromLabel(d.meta, job);
  const json& sched = Member(run, "schedulingPolicy");
  TESSERA_RETURN_IF_ERROR(KnownFields(sched, "spec.runPolicy.schedulingPolicy",
                                      KubeFieldsOf("SchedulingPolicy"), warnings));
  VolcanoQueue(sched, job, annotations);
  if (Member(sched, "priorityClass").is_string()) {
    (*job)["priorityClassName"] = sched["priorityClass"];
  }
  if (Member(run, "suspend") == true) (*job)["suspend"] = true;
  CopyLifetime(run, job);
  return Status::Ok();
}

// The gang of a Kubeflow job of `total` pods: schedulingPolicy.minAvailable, else `otherwise`.
Result<int64_t> KubeflowGang(const json& sched, int64_t total, int64_t otherwise) {
  const json& m = Member(sched, "minAvailable");
  if (m.empty()) return otherwise;
  if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > total) {
    return FieldError(
        "spec.runPolicy.schedulingPolicy.minAvailable",
        "must be an integer from 1 to the job's replicas (" + std::to_string(total) + ")");
  }
  return m.get<int64_t>();
}

// Kubeflow's MPIJob (kubeflow.org/v1 of the training operator, v2beta1 of the MPI operator): a
// Launcher that runs mpirun and Workers, one gang. The launcher reaches the workers through
// tessera exec (the agent gives it a hostfile and an rsh agent), not ssh; a worker without a
// command waits for it, as the operator's do.
Result<json> KubeflowTask(const Doc& d, const json& rs, const std::string& p,
                          const std::string& name, const json& run, json* job, Warnings* warnings);

Result<std::vector<json>> MpiJob(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("MPIJobSpec"), warnings));
  const json& run = Member(spec, "runPolicy");
  json job = json::object(), annotations = Member(d.meta, "annotations");
  TESSERA_RETURN_IF_ERROR(KubeflowRunPolicy(d, run, &job, &annotations, warnings));
  if (const json& impl = Member(spec, "mpiImplementation");
      !impl.empty() && impl != "OpenMPI" && impl != "Intel" && impl != "MPICH") {
    return FieldError("spec.mpiImplementation", "must be OpenMPI, Intel or MPICH");
  }
  if (Member(spec, "runLauncherAsWorker") == true) {
    return FieldError("spec.runLauncherAsWorker",
                      "not supported: the launcher runs no ranks; add a worker instead");
  }
  const json& slots = Member(spec, "slotsPerWorker");
  if (!slots.empty() &&
      (!slots.is_number_integer() || slots.get<int64_t>() < 1 || slots.get<int64_t>() > 1024)) {
    return FieldError("spec.slotsPerWorker", "must be an integer from 1 to 1024");
  }
  const json& specs = Member(spec, "mpiReplicaSpecs");
  if (!specs.is_object() || !specs.contains("Launcher") || !specs.contains("Worker")) {
    return FieldError("spec.mpiReplicaSpecs", "must name a Launcher and Workers");
  }
  for (const auto& [type, _] : specs.items()) {
    if (type != "Launcher" && type != "Worker") {
      return FieldError("spec.mpiReplicaSpecs." + type, "must be Launcher or Worker");
    }
  }
  json tasks = json::array();
  int64_t total = 0;
  for (const char* type : {"Launcher", "Worker"}) {
    const std::string p = std::string("spec.mpiReplicaSpecs.") + type;
    const bool launcher = std::string(type) == "Launcher";
    const json& rs = Member(specs, type);
    if (launcher && !Member(rs, "replicas").empty() && Member(rs, "replicas") != 1) {
      return FieldError(p + ".replicas", "must be 1: an MPIJob has one launcher");
    }
    auto made = KubeflowTask(d, rs, p, launcher ? "launcher" : "worker", run, &job, warnings);
    if (!made.ok()) return made.status();
    json task = std::move(made).value();
    if (!launcher && !task.contains("command") && !task.contains("args")) {
      task["command"] = {"sleep", "365d"};
    }
    total += task["replicas"].get<int64_t>();
    tasks.push_back(std::move(task));
  }
  job["tasks"] = tasks;
  job["mpi"] = {{"launcher", "launcher"}, {"slotsPerWorker", slots.empty() ? json(1) : slots}};
  job["completesWith"] = "launcher";
  auto gang = KubeflowGang(Member(run, "schedulingPolicy"), total, total);
  if (!gang.ok()) return gang.status();
  job["minMember"] = *gang;
  return std::vector<json>{Object("Job", d.name, d.ns, Member(d.meta, "labels"), annotations, job)};
}

// Kubeflow's TFJob (kubeflow.org/v1): Chief (or Master), PS, Worker and Evaluator replicas,
// one gang; each pod gets TF_CONFIG with every server's address and port (a port Tessera
// reserves on its node). The job completes with its chief, else as its successPolicy says.
Result<std::vector<json>> TfJob(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("TFJobSpec"), warnings));
  const json& run = Member(spec, "runPolicy");
  json job = json::object(), annotations = Member(d.meta, "annotations");
  TESSERA_RETURN_IF_ERROR(KubeflowRunPolicy(d, run, &job, &annotations, warnings));
  const json& success = Member(spec, "successPolicy");
  if (!success.empty() && success != "" && success != "AllWorkers") {
    return FieldError("spec.successPolicy",
                      "must be \"\" (the chief, else worker 0) or AllWorkers");
  }
  const json& specs = Member(spec, "tfReplicaSpecs");
  static const char* kTypes[] = {"Chief", "Master", "PS", "Worker", "Evaluator"};
  if (!specs.is_object() || specs.empty()) {
    return FieldError("spec.tfReplicaSpecs", "must name Chief, PS, Worker or Evaluator replicas");
  }
  for (const auto& [type, _] : specs.items()) {
    if (std::find_if(std::begin(kTypes), std::end(kTypes),
                     [&](const char* t) { return type == t; }) == std::end(kTypes)) {
      return FieldError("spec.tfReplicaSpecs." + type,
                        "must be Chief, Master, PS, Worker or Evaluator");
    }
  }
  if (specs.contains("Chief") && specs.contains("Master")) {
    return FieldError("spec.tfReplicaSpecs.Master", "a TFJob has a Chief or a Master, not both");
  }
  json tasks = json::array();
  int64_t total = 0;
  std::string chief;
  for (const char* type : kTypes) {
    const json& rs = Member(specs, type);
    if (rs.empty()) continue;
    const std::string p = std::string("spec.tfReplicaSpecs.") + type;
    std::string name = type;
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool is_chief = name == "chief" || name == "master";
    if ((is_chief || name == "evaluator") && !Member(rs, "replicas").empty() &&
        Member(rs, "replicas") != 1) {
      return FieldError(p + ".replicas", "must be 1");
    }
    auto made = KubeflowTask(d, rs, p, name, run, &job, warnings);
    if (!made.ok()) return made.status();
    if (is_chief) chief = name;
    total += (*made)["replicas"].get<int64_t>();
    tasks.push_back(std::move(made).value());
  }
  job["tasks"] = tasks;
  job["tfConfig"] = true;
  if (!chief.empty()) {
    job["completesWith"] = chief;
  } else if (specs.contains("Worker")) {
    job["completesWith"] = success == "AllWorkers" ? "worker" : "worker-0";
  }
  auto gang = KubeflowGang(Member(run, "schedulingPolicy"), total, total);
  if (!gang.ok()) return gang.status();
  job["minMember"] = *gang;
  return std::vector<json>{Object("Job", d.name, d.ns, Member(d.meta, "labels"), annotations, job)};
}

// One replica type of a Kubeflow job (its replicaSpecs entry at `p`) as one task named `name`:
// its pods' template, restartPolicy (ExitCode warned, run as OnFailure) and the run policy's
// backoffLimit.
Result<json> KubeflowTask(const Doc& d, const json& rs, const std::string& p,
                          const std::string& name, const json& run, json* job, Warnings* warnings) {
  TESSERA_RETURN_IF_ERROR(KnownFields(rs, p, KubeFieldsOf("ReplicaSpec"), warnings));
  const json& replicas = Member(rs, "replicas");
  if (!replicas.empty() && (!replicas.is_number_integer() || replicas.get<int64_t>() < 1)) {
    return FieldError(p + ".replicas", "must be a positive integer");
  }
  json task = {{"name", name}, {"replicas", replicas.empty() ? 1 : replicas.get<int64_t>()}};
  const json& tmpl = Member(rs, "template");
  TESSERA_RETURN_IF_ERROR(
      KnownFields(tmpl, p + ".template", KubeFieldsOf("PodTemplateSpec"), warnings));
  const PodContext ctx{d.ns, &Member(tmpl, "metadata"), false, "", warnings};
  TESSERA_RETURN_IF_ERROR(
      PodSpecToTask(Member(tmpl, "spec"), p + ".template.spec", ctx, &task, job));
  // The replica's restartPolicy is the operator's for its pods; ExitCode restarts on the
  // retryable codes, which Tessera does not tell apart.
  if (const json& rp = Member(rs, "restartPolicy"); !rp.empty()) {
    if (rp == "ExitCode") {
      warnings->push_back(p +
                          ".restartPolicy: ExitCode: not acted on: a failed pod restarts as "
                          "with OnFailure, whatever its exit code");
      task["restartPolicy"] = "OnFailure";
    } else if (rp == "Always" || rp == "OnFailure" || rp == "Never") {
      task["restartPolicy"] = rp;
    } else {
      return FieldError(p + ".restartPolicy", "must be Always, OnFailure, Never or ExitCode");
    }
  }
  if (Member(run, "backoffLimit").is_number_integer()) task["maxRetries"] = run["backoffLimit"];
  return task;
}

Result<std::vector<json>> PyTorchJob(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("PyTorchJobSpec"), warnings));
  const json& run = Member(spec, "runPolicy");
  json job = json::object(), annotations = Member(d.meta, "annotations");
  TESSERA_RETURN_IF_ERROR(KubeflowRunPolicy(d, run, &job, &annotations, warnings));
  const json& sched = Member(run, "schedulingPolicy");
  const json& specs = Member(spec, "pytorchReplicaSpecs");
  if (!specs.is_object() || specs.empty()) {
    return FieldError("spec.pytorchReplicaSpecs", "must name a Master and/or Workers");
  }
  for (const auto& [type, _] : specs.items()) {
    if (type != "Master" && type != "Worker") {
      return FieldError("spec.pytorchReplicaSpecs." + type, "must be Master or Worker");
    }
  }
  const json& elastic = Member(spec, "elasticPolicy");
  TESSERA_RETURN_IF_ERROR(
      KnownFields(elastic, "spec.elasticPolicy", KubeFieldsOf("ElasticPolicy"), warnings));
  json tasks = json::array();
  int64_t total = 0, masters = 0;
  for (const char* type : {"Master", "Worker"}) {
    const json& rs = Member(specs, type);
    if (rs.empty()) continue;
    const std::string p = std::string("spec.pytorchReplicaSpecs.") + type;
    if (std::string(type) == "Master" && !Member(rs, "replicas").empty() &&
        Member(rs, "replicas") != 1) {
      return FieldError(p + ".replicas", "must be 1: a PyTorchJob has one master");
    }
    auto made = KubeflowTask(d, rs, p, std::string(type) == "Master" ? "master" : "worker", run,
                             &job, warnings);
    if (!made.ok()) return made.status();
    json task = std::move(made).value();
    const int64_t n = task["replicas"].get<int64_t>();
    // torchrun's processes per pod, as the operator gives them.
    const json& nproc =
        spec.contains("nprocPerNode") ? spec["nprocPerNode"] : Member(elastic, "nProcPerNode");
    if (nproc.is_string() || nproc.is_number_integer()) {
      if (!task["env"].is_object()) task["env"] = json::object();
      task["env"]["PET_NPROC_PER_NODE"] =
          nproc.is_string() ? nproc.get<std::string>() : std::to_string(nproc.get<int64_t>());
    }
    total += n;
    if (std::string(type) == "Master") masters = n;
    tasks.push_back(std::move(task));
  }
  job["tasks"] = tasks;
  // The gang: the scheduling policy's minimum, else the elastic minimum (the master and
  // minReplicas workers), else every replica.
  int64_t min_member = total;
  if (const json& m = Member(elastic, "minReplicas"); m.is_number_integer()) {
    const json& max = Member(elastic, "maxReplicas");
    if (m.get<int64_t>() < 1 ||
        (max.is_number_integer() && max.get<int64_t>() < m.get<int64_t>())) {
      return FieldError("spec.elasticPolicy.minReplicas",
                        "must be at least 1 and at most maxReplicas");
    }
    if (max.is_number_integer() && total - masters > max.get<int64_t>()) {
      return FieldError("spec.pytorchReplicaSpecs.Worker.replicas",
                        "must not exceed spec.elasticPolicy.maxReplicas (" + max.dump() + ")");
    }
    min_member = std::min(total, masters + m.get<int64_t>());
  }
  auto gang = KubeflowGang(sched, total, min_member);
  if (!gang.ok()) return gang.status();
  job["minMember"] = *gang;
  return std::vector<json>{Object("Job", d.name, d.ns, Member(d.meta, "labels"), annotations, job)};
}

Result<std::vector<json>> VolcanoPodGroup(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("PodGroupSpec"), warnings));
  json pg = json::object(), annotations = Member(d.meta, "annotations");
  for (const char* k : {"minMember", "priorityClassName", "minTaskMember"}) {
    if (spec.contains(k)) pg[k] = spec[k];
  }
  VolcanoQueue(spec, &pg, &annotations);
  return std::vector<json>{
      Object("PodGroup", d.name, d.ns, Member(d.meta, "labels"), annotations, pg)};
}

constexpr char kVolcanoFlavor[] = "volcano-default";
constexpr char kVolcanoCohort[] = "volcano";

// A Volcano Queue as a Tessera Queue in the cohort "volcano" (which every Volcano queue shares
// and which lends the cluster's capacity): its weight the fair-sharing
// weight, guarantee (or deserved) its nominal quota, capability its cap (borrowing limit above
// the nominal), reclaimable whether the cohort may reclaim from it. With the ResourceFlavor and
// Cohort it needs. Jobs and PodGroups name it with `queue` from any namespace.
Result<std::vector<json>> VolcanoQueueKind(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("VolcanoQueueSpec"), warnings));
  static const char* kResources[] = {"nvidia.com/gpu", "cpu", "memory"};
  auto amounts = [&](const char* field) -> Result<json> {
    const json& m = field == std::string("guarantee") ? Member(Member(spec, field), "resource")
                                                      : Member(spec, field);
    json out = json::object();
    for (const auto& [name, v] : m.items()) {
      if (std::find(std::begin(kResources), std::end(kResources), name) == std::end(kResources)) {
        warnings->push_back("spec." + std::string(field) + "." + name +
                            ": not acted on: queues count nvidia.com/gpu, cpu and memory");
        continue;
      }
      out[name] = v;
    }
    return out;
  };
  Result<json> cap = amounts("capability");
  if (!cap.ok()) return cap.status();
  Result<json> nominal = amounts(Member(spec, "guarantee").empty() ? "deserved" : "guarantee");
  if (!nominal.ok()) return nominal.status();
  json resources = json::array();
  for (const char* r : kResources) {
    json q = {{"name", r}, {"nominalQuota", nominal->contains(r) ? (*nominal)[r] : json(0)}};
    if (cap->contains(r)) {
      // The cap above the nominal quota, as a quantity: capability - nominal.
      auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
      Result<Quantity> c = ParseQuantity(text((*cap)[r]), "spec.capability." + std::string(r));
      Result<Quantity> n = ParseQuantity(text(q["nominalQuota"]), "spec.guarantee");
      if (!c.ok()) return c.status();
      if (!n.ok()) return n.status();
      if (c->nano < n->nano) {
        return FieldError("spec.capability." + std::string(r), "is below the guarantee");
      }
      const __int128 above = c->nano - n->nano;
      q["borrowingLimit"] = std::to_string(static_cast<int64_t>(above)) + "n";
    }
    resources.push_back(q);
  }
  const json covered = json::array({"nvidia.com/gpu", "cpu", "memory"});
  json queue = {
      {"cohort", kVolcanoCohort},
      {"preemption", {{"withinClusterQueue", "LowerPriority"}, {"reclaimWithinCohort", "Any"}}},
      {"resourceGroups",
       json::array(
           {{{"coveredResources", covered},
             {"flavors", json::array({{{"name", kVolcanoFlavor}, {"resources", resources}}})}}})}};
  if (const json& w = Member(spec, "weight"); !w.empty()) queue["fairSharing"] = {{"weight", w}};
  if (const json& r = Member(spec, "reclaimable"); r.is_boolean()) queue["reclaimable"] = r;
  json annotations = Member(d.meta, "annotations");
  if (!annotations.is_object()) annotations = json::object();
  annotations["tessera.io/volcano-queue"] = "true";
  // The cohort lends what the cluster has: the scheduling loop sets its quota to the ready
  // nodes' capacity each cycle (the figures here stand until then).
  const json unbounded = json::array({{{"name", "nvidia.com/gpu"}, {"nominalQuota", 1000000}},
                                      {{"name", "cpu"}, {"nominalQuota", 1000000000}},
                                      {{"name", "memory"}, {"nominalQuota", "1Ei"}}});
  json cohort = {
      {"resourceGroups",
       json::array(
           {{{"coveredResources", covered},
             {"flavors", json::array({{{"name", kVolcanoFlavor}, {"resources", unbounded}}})}}})}};
  const json cohort_annotations = {{"tessera.io/volcano-cohort", "true"}};
  return std::vector<json>{
      Object("ResourceFlavor", kVolcanoFlavor, "", kEmpty, kEmpty, json::object()),
      Object("Cohort", kVolcanoCohort, "", kEmpty, cohort_annotations, cohort),
      Object("Queue", d.name, "", Member(d.meta, "labels"), annotations, queue)};
}

// The namespaces a ClusterQueue's namespaceSelector names outright, for the rule on namespace
// tokens' LocalQueues: {} is every namespace; the kubernetes.io/metadata.name label
// (matchLabels, or matchExpressions In) names them. Other selectors are an error here (the
// selector itself still acts at admission).
Result<json> AllowedNamespaces(const json& sel) {
  constexpr char kNameLabel[] = "kubernetes.io/metadata.name";
  const std::string path = "spec.namespaceSelector";
  const std::string why =
      "only {} (every namespace) or the kubernetes.io/metadata.name label (matchLabels, or "
      "matchExpressions with In) are supported: queues do not read other namespace labels yet";
  if (!sel.is_object()) return FieldError(path, "must be a label selector");
  if (sel.empty()) return json::array({"*"});
  TESSERA_RETURN_IF_ERROR(OnlyFields(sel, path, {"matchLabels", "matchExpressions"}, why));
  std::set<std::string> names;
  bool first = true;
  auto intersect = [&](std::set<std::string> some) {
    if (first) {
      names = std::move(some);
    } else {
      std::set<std::string> both;
      for (const std::string& n : some) {
        if (names.contains(n)) both.insert(n);
      }
      names = std::move(both);
    }
    first = false;
  };
  const json& labels = Member(sel, "matchLabels");
  for (const auto& [k, v] : labels.items()) {
    if (k != kNameLabel || !v.is_string()) return FieldError(path + ".matchLabels." + k, why);
    intersect({v.get<std::string>()});
  }
  const json& exprs = Member(sel, "matchExpressions");
  if (!exprs.is_null() && !exprs.is_array() && !exprs.empty()) {
    return FieldError(path + ".matchExpressions", "must be a list");
  }
  for (size_t i = 0; exprs.is_array() && i < exprs.size(); ++i) {
    const std::string p = Index(path + ".matchExpressions", i);
    const json& e = exprs[i];
    TESSERA_RETURN_IF_ERROR(OnlyFields(e, p, {"key", "operator", "values"}, why));
    if (Text(e, "key") != kNameLabel || Text(e, "operator") != "In" ||
        !Member(e, "values").is_array()) {
      return FieldError(p, why);
    }
    std::set<std::string> some;
    for (const json& v : e["values"]) {
      if (!v.is_string()) return FieldError(p + ".values", "must be a list of strings");
      some.insert(v.get<std::string>());
    }
    intersect(std::move(some));
  }
  return json(std::vector<std::string>(names.begin(), names.end()));
}

// Renames a Kueue v1beta2 spec field to its v1beta1 name (ClusterQueue cohortName -> cohort,
// Cohort parentName -> parent); both names given is an error naming the v1beta2 one.
Status V1beta1Name(json* spec, const char* v1beta2, const char* v1beta1) {
  if (!spec->is_object() || !spec->contains(v1beta2)) return Status::Ok();
  if (spec->contains(v1beta1)) {
    return FieldError(std::string("spec.") + v1beta2, std::string("give spec.") + v1beta1 +
                                                          " (v1beta1) or spec." + v1beta2 +
                                                          " (v1beta2), not both");
  }
  (*spec)[v1beta1] = (*spec)[v1beta2];
  spec->erase(v1beta2);
  return Status::Ok();
}

Result<std::vector<json>> Kueue(const Doc& d, const json& doc, Warnings* warnings) {
  const json& spec = Member(doc, "spec");
  if (d.kind == "ClusterQueue") {
    TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("ClusterQueueSpec"), warnings));
    json q = spec;
    for (const char* k : {"admissionChecks", "admissionChecksStrategy", "admissionScope"}) {
      q.erase(k);
    }
    TESSERA_RETURN_IF_ERROR(V1beta1Name(&q, "cohortName", "cohort"));
    // Kueue admits workloads of the namespaces the selector matches, and of none without one.
    if (q.contains("namespaceSelector") && !q["namespaceSelector"].is_null()) {
      auto sel = LabelSelector::FromJson(q["namespaceSelector"], "spec.namespaceSelector");
      if (!sel.ok()) return sel.status();
      // Namespace tokens may point LocalQueues at it when the namespaces are named outright.
      if (auto allowed = AllowedNamespaces(q["namespaceSelector"]); allowed.ok()) {
        q["allowedNamespaces"] = *allowed;
      }
    } else {
      warnings->push_back(
          "spec.namespaceSelector: not set: as in Kueue, no namespace's workloads are admitted "
          "to this ClusterQueue; namespaceSelector: {} admits every namespace");
      // Every namespace carries its name label: this matches none.
      q["namespaceSelector"] = {
          {"matchExpressions",
           {{{"key", "kubernetes.io/metadata.name"}, {"operator", "DoesNotExist"}}}}};
    }
    return std::vector<json>{
        Object("Queue", d.name, "", Member(d.meta, "labels"), Member(d.meta, "annotations"), q)};
  }
  if (d.kind == "LocalQueue") {
    TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("LocalQueueSpec"), warnings));
    json l = json::object();
    if (spec.contains("clusterQueue")) l["clusterQueue"] = spec["clusterQueue"];
    return std::vector<json>{Object("LocalQueue", d.name, d.ns, Member(d.meta, "labels"),
                                    Member(d.meta, "annotations"), l)};
  }
  if (d.kind == "ResourceFlavor") {
    TESSERA_RETURN_IF_ERROR(
        KnownFields(spec, "spec", KubeFieldsOf("ResourceFlavorSpec"), warnings));
    json f = spec;
    if (f.is_object()) f.erase("topologyName");
    return std::vector<json>{Object("ResourceFlavor", d.name, "", Member(d.meta, "labels"),
                                    Member(d.meta, "annotations"), f)};
  }
  if (d.kind == "Cohort") {
    TESSERA_RETURN_IF_ERROR(KnownFields(spec, "spec", KubeFieldsOf("CohortSpec"), warnings));
    json c = spec;
    if (!c.is_object()) c = json::object();
    TESSERA_RETURN_IF_ERROR(V1beta1Name(&c, "parentName", "parent"));
    return std::vector<json>{
        Object("Cohort", d.name, "", Member(d.meta, "labels"), Member(d.meta, "annotations"), c)};
  }
  return FieldError("kind",
                    "Kueue " + d.kind +
                        " is not supported (known: ClusterQueue, LocalQueue, ResourceFlavor, "
                        "Cohort; Workloads are made by Tessera itself)");
}

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

std::string Rejection(const std::string& api, const std::string& kind) {
  if (kind == "DaemonSet") {
    return "a DaemonSet is not a Tessera object: the NVIDIA device plugin and DCGM exporter "
           "DaemonSets are replaced by `tessera agent` on each node";
  }
  if (kind == "PrometheusRule") {
    return "Prometheus rules are not scheduling objects: load them into Prometheus; Tessera "
           "serves the DCGM metric names they use on /metrics";
  }
  if (kind == "Deployment" || kind == "StatefulSet" || kind == "ReplicaSet") {
    return "a " + kind + " is not supported: submit a Job (tessera.io/v1, batch/v1 or Volcano)";
  }
  return "unknown kind " + kind + " of apiVersion " + api +
         " (Tessera understands Pod, batch/v1 Job, Volcano Job and PodGroup, Kubeflow PyTorchJob "
         "and MPIJob, "
         "Namespace, Kueue "
         "ClusterQueue/LocalQueue/ResourceFlavor/Cohort, ResourceQuota, PriorityClass, "
         "device-plugin ConfigMaps and tessera.io/v1 kinds)";
}

}  // namespace

Result<std::vector<json>> ParseYamlDocuments(std::string_view text) {
  Loader loader(text);
  return loader.Documents();
}

// A Kubernetes object's top level, status included (as `kubectl get -o yaml` writes it).
constexpr FieldUse kObjectFields[] = {
    {"apiVersion", ""},
    {"kind", ""},
    {"metadata", ""},
    {"spec", ""},
    {"status", "not acted on: status is written by Tessera"},
};

namespace {
// A Kubernetes, Kueue or Volcano document's objects (metadata checked, namespace defaulted).
Result<std::vector<json>> TranslateKube(const Doc& d, const json& doc, Warnings* warnings);
}  // namespace

Result<std::vector<json>> TranslateDocument(const json& doc, std::string_view default_namespace,
                                            std::vector<std::string>* warnings) {
  std::vector<std::string> ignored;
  if (warnings == nullptr) warnings = &ignored;
  if (doc.is_null()) return std::vector<json>{};
  if (!doc.is_object()) return InvalidArgument("document: must be a map");
  if (!doc.contains("apiVersion") && !doc.contains("kind")) {
    if (doc.contains("groups")) {
      return InvalidArgument(Rejection("", "PrometheusRule"));
    }
    if (doc.contains("devicePlugin")) {
      const json& cfg = Member(doc["devicePlugin"], "config");
      TESSERA_RETURN_IF_ERROR(OnlyFields(doc, "", {"devicePlugin"}, kNotRun));
      TESSERA_RETURN_IF_ERROR(
          OnlyFields(cfg, "devicePlugin.config", {"name", "create", "default", "data"}, kNotRun));
      const std::string name = Text(cfg, "name").empty() ? "device-plugin" : Text(cfg, "name");
      return SharingConfigs(name, Member(cfg, "data"), "devicePlugin.config.data",
                            Text(cfg, "default"), warnings);
    }
    return InvalidArgument("document: has no apiVersion and kind");
  }
  Doc d;
  d.api = Text(doc, "apiVersion");
  d.kind = Text(doc, "kind");
  d.meta = Member(doc, "metadata");
  d.name = Text(d.meta, "name");
  d.ns = Text(d.meta, "namespace");
  if (d.api.empty()) return FieldError("apiVersion", "must be set");
  if (d.kind.empty()) return FieldError("kind", "must be set");
  if (d.api == kApiVersion) {
    json obj = doc;
    const KindInfo* info = FindKind(d.kind);
    if (info != nullptr && info->namespaced && d.ns.empty() && obj["metadata"].is_object()) {
      obj["metadata"]["namespace"] = default_namespace;
    }
    return std::vector<json>{obj};
  }
  if (IsVolcanoCommand(doc)) {
    return InvalidArgument(
        "Command: a bus.volcano.sh Command is carried out by the server when it is created "
        "(tessera apply, kubectl create); it is not an object to translate");
  }
  TESSERA_RETURN_IF_ERROR(KnownFields(d.meta, "metadata", KubeFieldsOf("ObjectMeta"), warnings));
  // Labels and annotations are maps of strings (a patch may have set them to anything).
  for (const char* m : {"labels", "annotations"}) {
    const json& v = Member(d.meta, m);
    const bool strings =
        v.is_null() || (v.is_object() && std::all_of(v.begin(), v.end(),
                                                     [](const json& e) { return e.is_string(); }));
    if (!strings) return FieldError(std::string("metadata.") + m, "must be a map of strings");
  }
  if (d.name.empty()) return FieldError("metadata.name", "must be set");
  if (d.ns.empty()) d.ns = std::string(default_namespace);
  Result<std::vector<json>> objs = TranslateKube(d, doc, warnings);
  if (!objs.ok()) return objs;
  // The document's own objects keep it; the cohort and flavor every Volcano Queue shares do not.
  if (KubeKindOf(d.api, d.kind) != nullptr) {
    const std::string source = SourceDocument(doc, d.ns).dump();
    const bool shared_first = d.api.starts_with("scheduling.volcano.sh/") && d.kind == "Queue";
    for (size_t i = shared_first ? objs->size() - 1 : 0; i < objs->size(); ++i) {
      json& meta = (*objs)[i]["metadata"];
      if (!meta["annotations"].is_object()) meta["annotations"] = json::object();
      meta["annotations"][std::string(kSourceAnnotation)] = source;
    }
  }
  return objs;
}

namespace {

Result<std::vector<json>> TranslateKube(const Doc& d, const json& doc, Warnings* warnings) {
  const std::string group = d.api.substr(0, d.api.find('/'));
  if (d.api == "v1" && d.kind == "Pod") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return Pod(d, doc, warnings);
  }
  if (d.api == "batch/v1" && d.kind == "Job") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return BatchJob(d, doc, warnings);
  }
  if (group == "batch.volcano.sh" && d.kind == "Job") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return VolcanoJob(d, doc, warnings);
  }
  if (group == "scheduling.volcano.sh" && d.kind == "PodGroup") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return VolcanoPodGroup(d, doc, warnings);
  }
  if (group == "scheduling.volcano.sh" && d.kind == "Queue") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return VolcanoQueueKind(d, doc, warnings);
  }
  if (group == "kueue.x-k8s.io") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return Kueue(d, doc, warnings);
  }
  if (d.api == "kubeflow.org/v1" && d.kind == "TFJob") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return TfJob(d, doc, warnings);
  }
  if ((d.api == "kubeflow.org/v1" || d.api == "kubeflow.org/v2beta1") && d.kind == "MPIJob") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return MpiJob(d, doc, warnings);
  }
  if (d.api == "kubeflow.org/v1" && d.kind == "PyTorchJob") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    return PyTorchJob(d, doc, warnings);
  }
  if (d.api == "v1" && d.kind == "ResourceQuota") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    const json& spec = Member(doc, "spec");
    TESSERA_RETURN_IF_ERROR(
        OnlyFields(spec, "spec", {"hard"}, "not supported: Tessera quotas are hard limits only"));
    return std::vector<json>{Object("NamespaceQuota", d.name, d.ns, Member(d.meta, "labels"),
                                    Member(d.meta, "annotations"), spec)};
  }
  if (group == "scheduling.k8s.io" && d.kind == "PriorityClass") {
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", KubeFieldsOf("PriorityClass"), warnings));
    json spec = json::object();
    for (const char* k : {"value", "preemptionPolicy", "globalDefault", "description"}) {
      if (doc.contains(k)) spec[k] = doc[k];
    }
    return std::vector<json>{Object("PriorityClass", d.name, "", Member(d.meta, "labels"),
                                    Member(d.meta, "annotations"), spec)};
  }
  if (d.api == "v1" && d.kind == "Namespace") {
    // Its labels and annotations are kept; its objects are deleted with it.
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", kObjectFields, warnings));
    const json& spec = Member(doc, "spec");
    TESSERA_RETURN_IF_ERROR(OnlyFields(spec, "spec", {"finalizers"}, kNotRun));
    const json& finalizers = Member(spec, "finalizers");
    if (!AsksNothing(finalizers) && finalizers != json::array({"kubernetes"})) {
      warnings->push_back(
          "spec.finalizers: not acted on: a namespace's objects are deleted with "
          "it at once");
    }
    TESSERA_RETURN_IF_ERROR(ValidateName(d.name, true, "metadata.name"));
    return std::vector<json>{Object("Namespace", d.name, "", Member(d.meta, "labels"),
                                    Member(d.meta, "annotations"), json::object())};
  }
  if (d.api == "v1" && d.kind == "ConfigMap") {
    // The NVIDIA device plugin's config map: each key a config; "any" (the chart's usual
    // default name) covers nodes without a config label.
    TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", KubeFieldsOf("ConfigMap"), warnings));
    return SharingConfigs(d.name, Member(doc, "data"), "data", "any", warnings);
  }
  return InvalidArgument(Rejection(d.api, d.kind));
}

}  // namespace

bool IsVolcanoCommand(const json& doc) {
  return doc.is_object() && Text(doc, "kind") == "Command" &&
         Text(doc, "apiVersion").starts_with("bus.volcano.sh/");
}

Result<VolcanoCommand> ParseVolcanoCommand(const json& doc, std::string_view default_namespace,
                                           std::vector<std::string>* warnings) {
  std::vector<std::string> ignored;
  if (warnings == nullptr) warnings = &ignored;
  if (!IsVolcanoCommand(doc)) return FieldError("kind", "must be a bus.volcano.sh Command");
  if (Text(doc, "apiVersion") != "bus.volcano.sh/v1alpha1") {
    return FieldError("apiVersion", "must be bus.volcano.sh/v1alpha1");
  }
  TESSERA_RETURN_IF_ERROR(KnownFields(doc, "", KubeFieldsOf("VolcanoCommand"), warnings));
  const json& meta = Member(doc, "metadata");
  TESSERA_RETURN_IF_ERROR(KnownFields(meta, "metadata", KubeFieldsOf("ObjectMeta"), warnings));
  VolcanoCommand c;
  c.name = Text(meta, "name");
  c.generate_name = Text(meta, "generateName");
  c.ns = Text(meta, "namespace").empty() ? std::string(default_namespace) : Text(meta, "namespace");
  if (c.name.empty() && c.generate_name.empty()) {
    return FieldError("metadata.name", "must be set (or metadata.generateName)");
  }
  TESSERA_RETURN_IF_ERROR(ValidateName(c.ns, true, "metadata.namespace"));
  const std::string action = Text(doc, "action");
  if (action == "CloseQueue" || action == "OpenQueue") {
    c.close = action == "CloseQueue";
  } else if (action.empty()) {
    return FieldError("action", "must be set (OpenQueue or CloseQueue)");
  } else {
    return FieldError("action", "\"" + action +
                                    "\" is not carried out here: Tessera takes OpenQueue and "
                                    "CloseQueue (suspend a job with its spec.suspend instead)");
  }
  const json& target = Member(doc, "target");
  static const FieldUse kTarget[] = {{"apiVersion", ""}, {"kind", ""},
                                     {"name", ""},       {"uid", ""},
                                     {"controller", ""}, {"blockOwnerDeletion", ""}};
  TESSERA_RETURN_IF_ERROR(KnownFields(target, "target", kTarget, warnings));
  if (Text(target, "kind") != "Queue" ||
      !Text(target, "apiVersion").starts_with("scheduling.volcano.sh/")) {
    return FieldError(
        "target", "must name a Queue of scheduling.volcano.sh (" + action + " acts on a queue)");
  }
  c.queue = Text(target, "name");
  if (c.queue.empty()) return FieldError("target.name", "must be set");
  c.doc = doc;
  c.doc["metadata"]["namespace"] = c.ns;
  return c;
}

std::string DocumentPlace(std::string_view source, size_t index, const json& doc) {
  std::string what = std::string(source) + ": document " + std::to_string(index + 1);
  const std::string kind = Text(doc, "kind"), name = Text(Member(doc, "metadata"), "name");
  if (!kind.empty()) what += " (" + kind + (name.empty() ? "" : " " + name) + ")";
  return what;
}

Result<std::vector<json>> TranslateManifest(std::string_view text, std::string_view source,
                                            std::string_view default_namespace,
                                            std::vector<std::vector<std::string>>* warnings) {
  Result<std::vector<json>> docs = ParseYamlDocuments(text);
  if (!docs.ok()) return InvalidArgument(std::string(source) + ": " + docs.status().message());
  std::vector<json> out;
  for (size_t i = 0; i < docs->size(); ++i) {
    const json& doc = (*docs)[i];
    std::vector<std::string> notes;
    Result<std::vector<json>> objs = TranslateDocument(doc, default_namespace, &notes);
    if (!objs.ok()) {
      return InvalidArgument(DocumentPlace(source, i, doc) + ": " + objs.status().message());
    }
    std::vector<std::vector<std::string>> per_object;
    AppendDocument(std::move(objs).value(), notes, &out, &per_object);
    if (warnings != nullptr) {
      for (auto& w : per_object) warnings->push_back(std::move(w));
    }
  }
  return out;
}

void AppendDocument(std::vector<json> objs, const std::vector<std::string>& notes,
                    std::vector<json>* out, std::vector<std::vector<std::string>>* warnings) {
  for (size_t k = 0; k < objs.size(); ++k) {
    out->push_back(std::move(objs[k]));
    warnings->push_back(k + 1 == objs.size() ? notes : std::vector<std::string>{});
  }
}

}  // namespace tessera::api
