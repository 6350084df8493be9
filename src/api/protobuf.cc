#include "api/protobuf.h"

#include <cstdint>
#include <span>
#include <string>

#include "api/json_text.h"
#include "api/time.h"

namespace tessera::api {

using nlohmann::json;

namespace {

enum class Type : uint8_t {
  kString,
  kBytes,  // base64 in JSON
  kInt,    // int32 or int64 (varint)
  kBool,
  kMessage,
  kQuantity,  // resource.Quantity: a message whose field 1 is the string
  kTime,      // metav1.Time: seconds (1) and nanos (2), as RFC 3339
  kSkipped,   // read past: a status, which the server writes
};

struct Message;

struct Field {
  int number;
  const char* name;
  Type type;
  const Message* message = nullptr;  // kMessage
  bool repeated = false;
  bool map = false;        // map<string, type>: repeated entries of key (1) and value (2)
  bool keep_zero = false;  // 0 and false are values (else left out, as omitempty does)
};

struct Message {
  const char* name;
  std::span<const Field> fields;
};

constexpr Field kQuantityFields[] = {{1, "string", Type::kString}};
constexpr Message kQuantityMessage{"Quantity", kQuantityFields};
constexpr Field kTimeFields[] = {{1, "seconds", Type::kInt}, {2, "nanos", Type::kInt}};
constexpr Message kTimeMessage{"Time", kTimeFields};

// The messages, field numbers as k8s.io/api and k8s.io/apimachinery's generated.proto give them.
constexpr Field kTypeMetaFields[] = {{1, "apiVersion", Type::kString}, {2, "kind", Type::kString}};
constexpr Message kTypeMeta{"TypeMeta", kTypeMetaFields};

constexpr Field kOwnerReferenceFields[] = {
    {1, "kind", Type::kString},     {3, "name", Type::kString},
    {4, "uid", Type::kString},      {5, "apiVersion", Type::kString},
    {6, "controller", Type::kBool}, {7, "blockOwnerDeletion", Type::kBool}};
constexpr Message kOwnerReference{"OwnerReference", kOwnerReferenceFields};

constexpr Field kObjectMetaFields[] = {
    {1, "name", Type::kString},
    {2, "generateName", Type::kString},
    {3, "namespace", Type::kString},
    {4, "selfLink", Type::kString},
    {5, "uid", Type::kString},
    {6, "resourceVersion", Type::kString},
    {7, "generation", Type::kInt},
    {8, "creationTimestamp", Type::kTime},
    {9, "deletionTimestamp", Type::kTime},
    {10, "deletionGracePeriodSeconds", Type::kInt},
    {11, "labels", Type::kString, nullptr, false, true},
    {12, "annotations", Type::kString, nullptr, false, true},
    {13, "ownerReferences", Type::kMessage, &kOwnerReference, true},
    {14, "finalizers", Type::kString, nullptr, true}};
constexpr Message kObjectMeta{"ObjectMeta", kObjectMetaFields};

constexpr Field kNamespaceSpecFields[] = {{1, "finalizers", Type::kString, nullptr, true}};
constexpr Message kNamespaceSpec{"NamespaceSpec", kNamespaceSpecFields};
constexpr Field kNamespaceFields[] = {{1, "metadata", Type::kMessage, &kObjectMeta},
                                      {2, "spec", Type::kMessage, &kNamespaceSpec},
                                      {3, "status", Type::kSkipped}};
constexpr Message kNamespace{"Namespace", kNamespaceFields};

constexpr Field kConfigMapFields[] = {{1, "metadata", Type::kMessage, &kObjectMeta},
                                      {2, "data", Type::kString, nullptr, false, true},
                                      {3, "binaryData", Type::kBytes, nullptr, false, true},
                                      {4, "immutable", Type::kBool}};
constexpr Message kConfigMap{"ConfigMap", kConfigMapFields};

constexpr Field kResourceQuotaSpecFields[] = {{1, "hard", Type::kQuantity, nullptr, false, true},
                                              {2, "scopes", Type::kString, nullptr, true}};
constexpr Message kResourceQuotaSpec{"ResourceQuotaSpec", kResourceQuotaSpecFields};
constexpr Field kResourceQuotaFields[] = {{1, "metadata", Type::kMessage, &kObjectMeta},
                                          {2, "spec", Type::kMessage, &kResourceQuotaSpec},
                                          {3, "status", Type::kSkipped}};
constexpr Message kResourceQuota{"ResourceQuota", kResourceQuotaFields};

constexpr Field kPriorityClassFields[] = {{1, "metadata", Type::kMessage, &kObjectMeta},
                                          {2, "value", Type::kInt, nullptr, false, false, true},
                                          {3, "globalDefault", Type::kBool},
                                          {4, "description", Type::kString},
                                          {5, "preemptionPolicy", Type::kString}};
constexpr Message kPriorityClass{"PriorityClass", kPriorityClassFields};

// A pod template as kubectl create job writes one, and the fields of a plain training pod.
constexpr Field kEnvVarFields[] = {{1, "name", Type::kString}, {2, "value", Type::kString}};
constexpr Message kEnvVar{"EnvVar", kEnvVarFields};
constexpr Field kResourceRequirementsFields[] = {
    {1, "limits", Type::kQuantity, nullptr, false, true},
    {2, "requests", Type::kQuantity, nullptr, false, true}};
constexpr Message kResourceRequirements{"ResourceRequirements", kResourceRequirementsFields};
constexpr Field kContainerFields[] = {{1, "name", Type::kString},
                                      {2, "image", Type::kString},
                                      {3, "command", Type::kString, nullptr, true},
                                      {4, "args", Type::kString, nullptr, true},
                                      {5, "workingDir", Type::kString},
                                      {7, "env", Type::kMessage, &kEnvVar, true},
                                      {8, "resources", Type::kMessage, &kResourceRequirements},
                                      {13, "terminationMessagePath", Type::kString},
                                      {14, "imagePullPolicy", Type::kString},
                                      {16, "stdin", Type::kBool},
                                      {17, "stdinOnce", Type::kBool},
                                      {18, "tty", Type::kBool},
                                      {20, "terminationMessagePolicy", Type::kString}};
constexpr Message kContainer{"Container", kContainerFields};
constexpr Field kPodSpecFields[] = {{2, "containers", Type::kMessage, &kContainer, true},
                                    {3, "restartPolicy", Type::kString},
                                    {4, "terminationGracePeriodSeconds", Type::kInt},
                                    {5, "activeDeadlineSeconds", Type::kInt},
                                    {7, "nodeSelector", Type::kString, nullptr, false, true},
                                    {20, "initContainers", Type::kMessage, &kContainer, true},
                                    {24, "priorityClassName", Type::kString}};
constexpr Message kPodSpec{"PodSpec", kPodSpecFields};
constexpr Field kPodTemplateSpecFields[] = {{1, "metadata", Type::kMessage, &kObjectMeta},
                                            {2, "spec", Type::kMessage, &kPodSpec}};
constexpr Message kPodTemplateSpec{"PodTemplateSpec", kPodTemplateSpecFields};
constexpr Field kJobSpecFields[] = {{1, "parallelism", Type::kInt},
                                    {2, "completions", Type::kInt},
                                    {3, "activeDeadlineSeconds", Type::kInt},
                                    {6, "template", Type::kMessage, &kPodTemplateSpec},
                                    {7, "backoffLimit", Type::kInt},
                                    {8, "ttlSecondsAfterFinished", Type::kInt},
                                    {10, "suspend", Type::kBool}};
constexpr Message kJobSpec{"JobSpec", kJobSpecFields};
constexpr Field kJobFields[] = {{1, "metadata", Type::kMessage, &kObjectMeta},
                                {2, "spec", Type::kMessage, &kJobSpec},
                                {3, "status", Type::kSkipped}};
constexpr Message kJob{"Job", kJobFields};

// What kubectl delete and kubectl drain send (k8s.io/apimachinery meta/v1, k8s.io/api policy/v1).
constexpr Field kPreconditionsFields[] = {{1, "uid", Type::kString},
                                          {2, "resourceVersion", Type::kString}};
constexpr Message kPreconditions{"Preconditions", kPreconditionsFields};
constexpr Field kDeleteOptionsFields[] = {
    {1, "gracePeriodSeconds", Type::kInt, nullptr, false, false, true},
    {2, "preconditions", Type::kMessage, &kPreconditions},
    {3, "orphanDependents", Type::kBool, nullptr, false, false, true},
    {4, "propagationPolicy", Type::kString},
    {5, "dryRun", Type::kString, nullptr, true},
    {6, "ignoreStoreReadErrorWithClusterBreakingPotential", Type::kBool}};
constexpr Message kDeleteOptions{"DeleteOptions", kDeleteOptionsFields};
constexpr Field kEvictionFields[] = {{1, "metadata", Type::kMessage, &kObjectMeta},
                                     {2, "deleteOptions", Type::kMessage, &kDeleteOptions}};
constexpr Message kEviction{"Eviction", kEvictionFields};

// What kubectl auth can-i and kubectl auth whoami send (k8s.io/api authorization/v1 and
// authentication/v1).
constexpr Field kResourceAttributesFields[] = {
    {1, "namespace", Type::kString}, {2, "verb", Type::kString},
    {3, "group", Type::kString},     {4, "version", Type::kString},
    {5, "resource", Type::kString},  {6, "subresource", Type::kString},
    {7, "name", Type::kString}};
constexpr Message kResourceAttributes{"ResourceAttributes", kResourceAttributesFields};
constexpr Field kNonResourceAttributesFields[] = {{1, "path", Type::kString},
                                                  {2, "verb", Type::kString}};
constexpr Message kNonResourceAttributes{"NonResourceAttributes", kNonResourceAttributesFields};
constexpr Field kSelfSubjectAccessReviewSpecFields[] = {
    {1, "resourceAttributes", Type::kMessage, &kResourceAttributes},
    {2, "nonResourceAttributes", Type::kMessage, &kNonResourceAttributes}};
constexpr Message kSelfSubjectAccessReviewSpec{"SelfSubjectAccessReviewSpec",
                                               kSelfSubjectAccessReviewSpecFields};
constexpr Field kSelfSubjectAccessReviewFields[] = {
    {1, "metadata", Type::kMessage, &kObjectMeta},
    {2, "spec", Type::kMessage, &kSelfSubjectAccessReviewSpec},
    {3, "status", Type::kSkipped}};
constexpr Message kSelfSubjectAccessReview{"SelfSubjectAccessReview",
                                           kSelfSubjectAccessReviewFields};
constexpr Field kSelfSubjectReviewFields[] = {{1, "metadata", Type::kMessage, &kObjectMeta},
                                              {2, "status", Type::kSkipped}};
constexpr Message kSelfSubjectReview{"SelfSubjectReview", kSelfSubjectReviewFields};

struct Kind {
  std::string_view api_version, kind;
  const Message* message;
};
constexpr Kind kKinds[] = {
    {"v1", "Namespace", &kNamespace},
    {"v1", "ConfigMap", &kConfigMap},
    {"v1", "ResourceQuota", &kResourceQuota},
    {"scheduling.k8s.io/v1", "PriorityClass", &kPriorityClass},
    {"batch/v1", "Job", &kJob},
    {"v1", "DeleteOptions", &kDeleteOptions},
    {"meta.k8s.io/v1", "DeleteOptions", &kDeleteOptions},
    {"policy/v1", "Eviction", &kEviction},
    {"policy/v1beta1", "Eviction", &kEviction},
    {"authorization.k8s.io/v1", "SelfSubjectAccessReview", &kSelfSubjectAccessReview},
    {"authentication.k8s.io/v1", "SelfSubjectReview", &kSelfSubjectReview},
    {"authentication.k8s.io/v1beta1", "SelfSubjectReview", &kSelfSubjectReview}};

constexpr int kMaxDepth = 16;

// Reads the protobuf wire format (varints, length-delimited fields) of one message.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }

  bool Varint(uint64_t* out) {
    *out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return false;
      const auto b = static_cast<uint8_t>(data_[pos_++]);
      *out |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool Bytes(std::string_view* out) {
    uint64_t n = 0;
    if (!Varint(&n) || n > data_.size() - pos_) return false;
    *out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool Skip(size_t n) {
    if (n > data_.size() - pos_) return false;
    pos_ += n;
    return true;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

std::string Base64(std::string_view in) {
  static constexpr char kTable[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<uint8_t>(in[i + 2]);
    out += kTable[(v >> 18) & 63];
    out += kTable[(v >> 12) & 63];
    out += i + 1 < in.size() ? kTable[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kTable[v & 63] : '=';
  }
  return out;
}

Result<json> Decode(std::string_view data, const Message& m, const std::string& path, int depth);

// One value of `f` read from the wire (`wire` its wire type).
Result<json> Value(Reader& r, const Field& f, const Message& m, int wire, const std::string& at,
                   int depth) {
  const auto bad = [&](std::string_view what) {
    return InvalidArgument("protobuf body: " + at + " (" + m.name + " field " +
                           std::to_string(f.number) + "): " + std::string(what));
  };
  if (f.type == Type::kInt || f.type == Type::kBool) {
    uint64_t v = 0;
    if (wire != 0 || !r.Varint(&v)) return bad("not a varint");
    if (f.type == Type::kBool) return json(v != 0);
    return json(static_cast<int64_t>(v));
  }
  std::string_view bytes;
  if (wire != 2 || !r.Bytes(&bytes)) return bad("not a length-delimited value");
  switch (f.type) {
    case Type::kSkipped:
      return json();
    case Type::kString:
      // JSON strings are UTF-8; proto3's string fields must be too.
      if (!ValidUtf8(bytes)) return bad("a string that is not valid UTF-8");
      return json(std::string(bytes));
    case Type::kBytes:
      return json(Base64(bytes));
    case Type::kMessage:
      return Decode(bytes, *f.message, at, depth + 1);
    case Type::kQuantity: {
      auto q = Decode(bytes, kQuantityMessage, at, depth + 1);
      if (!q.ok()) return q.status();
      return json(q->value("string", ""));
    }
    case Type::kTime: {
      auto t = Decode(bytes, kTimeMessage, at, depth + 1);
      if (!t.ok()) return t.status();
      const int64_t seconds = t->value("seconds", int64_t{0});
      return seconds == 0 ? json() : json(FormatTime(seconds * 1000));
    }
    default:
      return bad("unexpected type");
  }
}

Result<json> Decode(std::string_view data, const Message& m, const std::string& path, int depth) {
  if (depth > kMaxDepth) return InvalidArgument("protobuf body: " + path + ": nested too deep");
  Reader r(data);
  json out = json::object();
  while (!r.done()) {
    uint64_t tag = 0;
    if (!r.Varint(&tag)) return InvalidArgument("protobuf body: " + path + ": truncated");
    const int number = static_cast<int>(tag >> 3);
    const int wire = static_cast<int>(tag & 7);
    const Field* f = nullptr;
    for (const Field& candidate : m.fields) {
      if (candidate.number == number) f = &candidate;
    }
    if (f == nullptr) {
      // Go's protobuf writes fields that hold nothing (0, "", an empty message), as JSON's
      // omitempty leaves them out; such a field says nothing and is passed over.
      uint64_t v = 0;
      std::string_view bytes;
      if ((wire == 0 && r.Varint(&v) && v == 0) ||
          (wire == 2 && r.Bytes(&bytes) && bytes.empty())) {
        continue;
      }
      return FailedPrecondition("protobuf body: " + (path.empty() ? "" : path + ": ") + m.name +
                                " field " + std::to_string(number) +
                                " is not one Tessera decodes; send the object as application/json");
    }
    const std::string at = path.empty() ? f->name : path + "." + f->name;
    if (f->map) {
      std::string_view entry;
      if (wire != 2 || !r.Bytes(&entry)) return InvalidArgument("protobuf body: " + at + ": bad");
      const Field kv[] = {{1, "key", Type::kString}, {2, "value", f->type, f->message}};
      const Message entry_message{"MapEntry", kv};
      Reader er(entry);
      std::string key;
      json value = f->type == Type::kString ? json("") : json();
      while (!er.done()) {
        uint64_t etag = 0;
        if (!er.Varint(&etag)) return InvalidArgument("protobuf body: " + at + ": truncated");
        const int en = static_cast<int>(etag >> 3);
        if (en != 1 && en != 2) return InvalidArgument("protobuf body: " + at + ": bad map entry");
        auto v = Value(er, kv[en - 1], entry_message, static_cast<int>(etag & 7), at, depth);
        if (!v.ok()) return v.status();
        if (en == 1) {
          key = v->get<std::string>();
        } else {
          value = std::move(v).value();
        }
      }
      out[f->name][key] = std::move(value);
      continue;
    }
    auto v = Value(r, *f, m, wire, at, depth);
    if (!v.ok()) return v.status();
    // What holds nothing is left out, as JSON's omitempty does.
    const bool zero = (v->is_string() && v->get<std::string>().empty()) ||
                      (!f->keep_zero && (*v == false || *v == 0));
    if (v->is_null() || (zero && !f->repeated)) continue;
    if (f->repeated) {
      out[f->name].push_back(std::move(v).value());
    } else {
      out[f->name] = std::move(v).value();
    }
  }
  return out;
}

}  // namespace

Result<json> KubeProtobufToJson(std::string_view body) {
  constexpr std::string_view kMagic("k8s\0", 4);
  if (!body.starts_with(kMagic)) {
    return InvalidArgument("protobuf body: does not start with Kubernetes' \"k8s\\0\" prefix");
  }
  // runtime.Unknown: typeMeta (1), raw (2), contentEncoding (3), contentType (4).
  Reader r(body.substr(kMagic.size()));
  json type_meta = json::object();
  std::string_view raw;
  while (!r.done()) {
    uint64_t tag = 0;
    std::string_view bytes;
    if (!r.Varint(&tag) || (tag & 7) != 2 || !r.Bytes(&bytes)) {
      return InvalidArgument("protobuf body: a malformed runtime.Unknown envelope");
    }
    const uint64_t number = tag >> 3;
    if (number == 1) {
      auto t = Decode(bytes, kTypeMeta, "typeMeta", 1);
      if (!t.ok()) return t.status();
      type_meta = std::move(t).value();
    } else if (number == 2) {
      raw = bytes;
    } else if (number == 3 && !bytes.empty()) {
      return FailedPrecondition("protobuf body: contentEncoding is not supported");
    }
  }
  const std::string api = type_meta.value("apiVersion", "");
  const std::string kind = type_meta.value("kind", "");
  for (const Kind& k : kKinds) {
    if (k.api_version != api || k.kind != kind) continue;
    auto obj = Decode(raw, *k.message, "", 0);
    if (!obj.ok()) return obj.status();
    json out = {{"apiVersion", api}, {"kind", kind}};
    out.update(*obj);
    return out;
  }
  return FailedPrecondition("protobuf body: " + (api.empty() ? std::string("?") : api) + " " +
                            (kind.empty() ? std::string("?") : kind) +
                            " is not decoded from protobuf here; send it as application/json");
}

}  // namespace tessera::api
