// API objects in the Kubernetes shape (apiVersion, kind, metadata, spec, status): the kinds the
// control plane serves, checks of an object's envelope and metadata with field paths, bounded
// JSON parsing, and label selectors.
#ifndef TESSERA_API_OBJECT_H_
#define TESSERA_API_OBJECT_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/json_text.h"
#include "core/status.h"

namespace tessera::api {

inline constexpr std::string_view kApiVersion = "tessera.io/v1";
inline constexpr std::string_view kGroup = "tessera.io";
inline constexpr std::string_view kGroupPath = "/apis/tessera.io/v1";

struct KindInfo {
  std::string_view kind;    // "Job"
  std::string_view plural;  // "jobs", the path segment
  bool namespaced = true;
  std::string_view short_name;  // kubectl's short name ("pg"), or empty
};

// Every kind the API serves, in a stable order.
const std::vector<KindInfo>& Kinds();
const KindInfo* FindKind(std::string_view kind);
const KindInfo* FindKindByPlural(std::string_view plural);

// A DNS-1123 subdomain (names) or label (namespaces): lowercase alphanumerics, '-' and, for
// subdomains, '.'; starting and ending alphanumeric; at most 253 / 63 characters.
Status ValidateName(std::string_view value, bool label, std::string_view path);

// Checks an object's envelope: a JSON object with apiVersion tessera.io/v1, a known kind, no
// fields beyond apiVersion/kind/metadata/spec/status, metadata with a valid name, a namespace
// exactly when the kind is namespaced, string labels and annotations with valid keys, and an
// object spec. Errors name the field ("metadata.labels.team: must be a string").
Status ValidateEnvelope(const nlohmann::json& obj);

// The object's kind, namespace ("" when cluster-scoped) and name; the envelope must be valid.
struct ObjectId {
  const KindInfo* kind = nullptr;
  std::string ns;
  std::string name;
};
ObjectId IdOf(const nlohmann::json& obj);

// Label selectors as kubectl writes them: equality-based ("a=b,c!=d,e,!f", also "a==b") and
// set-based ("a in (x,y),b notin (z)"), or from a LabelSelector object.
class LabelSelector {
 public:
  static Result<LabelSelector> Parse(std::string_view text);
  // A metav1.LabelSelector object: matchLabels and matchExpressions (In, NotIn, Exists,
  // DoesNotExist); errors name the field under `path`. {} matches everything.
  static Result<LabelSelector> FromJson(const nlohmann::json& sel, const std::string& path);
  bool Matches(const nlohmann::json& labels) const;  // labels: an object of strings, or null

 private:
  enum class Op : uint8_t { kEq, kNe, kExists, kNotExists, kIn, kNotIn };
  struct Term {
    std::string key;
    Op op;
    std::string value;
    std::vector<std::string> values;  // kIn, kNotIn
  };
  std::vector<Term> terms_;
};

// 128 bits as an RFC 4122 version 4 UUID ("xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx"), the form of
// metadata.uid.
std::string UuidText(uint64_t high, uint64_t low);

// A Tessera Event (tessera.io/v1) named `name` in `ns` about the object `kind` `about`: `type`
// Normal or Warning, a one-word `reason`, the `message`, at `time` (RFC 3339).
nlohmann::json EventObject(const std::string& ns, const std::string& name, std::string_view type,
                           std::string_view reason, std::string_view message,
                           const std::string& time, std::string_view kind, std::string_view about);

// Field selectors as Kubernetes takes them: "<field>=<value>", "<field>==<value>" and
// "<field>!=<value>" joined by ','; a field is a dotted path into the object
// ("metadata.name", "spec.nodeName") compared as text ("" when absent).
class FieldSelector {
 public:
  // Fields outside `supported` are an error, as Kubernetes' "field label not supported".
  static Result<FieldSelector> Parse(std::string_view text,
                                     const std::vector<std::string_view>& supported);
  bool Matches(const nlohmann::json& obj) const;

 private:
  struct Term {
    std::vector<std::string> path;
    bool equal = true;
    std::string value;
  };
  std::vector<Term> terms_;
};

}  // namespace tessera::api

#endif  // TESSERA_API_OBJECT_H_
