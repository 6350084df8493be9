// What a token may do, as kubectl asks: SelfSubjectAccessReview (authorization.k8s.io/v1,
// kubectl auth can-i) answered from Tessera's token scopes (Authorize), and SelfSubjectReview
// (authentication.k8s.io/v1, kubectl auth whoami). Neither is stored.
#include <optional>
#include <string>

#include "api/json_read.h"
#include "api/json_text.h"
#include "api/kinds.h"
#include "api/kube_kinds.h"
#include "api/object.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"

namespace tessera::server {

namespace {

constexpr std::string_view kAccessReviews =
    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
constexpr std::string_view kSubjectReviews[] = {
    "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    "/apis/authentication.k8s.io/v1beta1/selfsubjectreviews"};

// The user a token stands for, in Kubernetes' terms.
json UserInfo(const Principal& who) {
  const std::string role(RoleName(who.role));
  std::string name = "tessera:" + role;
  if (who.role == Principal::Role::kNamespace) name += ":" + who.ns;
  if (who.role == Principal::Role::kAgent) name += ":" + who.node;
  json info = {{"username", name}, {"groups", {"system:authenticated", "tessera:" + role + "s"}}};
  if (!who.token_id.empty()) info["uid"] = who.token_id;
  return info;
}

// Whether `who` may `verb` the resource the attributes name, and why not.
std::pair<bool, std::string> MayDo(const Principal& who, const json& attrs) {
  const std::string verb = Str(attrs, "verb"), group = Str(attrs, "group");
  const std::string resource = Str(attrs, "resource"), ns = Str(attrs, "namespace");
  const std::string name = Str(attrs, "name");
  // Services are read only, by anyone who reads the namespace's objects (server/services.cc).
  const bool services = group.empty() && resource == "services";
  if (services && verb != "get" && verb != "list" && verb != "watch") {
    return {false, "Tessera has no Services: a pod shares its node's network"};
  }
  if (who.role == Principal::Role::kAdmin) return {true, "the admin token may do anything"};
  // The kind the resource is a view of (Kubernetes, Kueue, Volcano, Kubeflow), or Tessera's.
  const api::KindInfo* kind = nullptr;
  for (const api::KubeKind& k : api::KubeKinds()) {
    if (k.group == group && k.plural == resource && !k.stored.empty()) {
      kind = api::FindKind(k.stored);
      break;
    }
  }
  if (kind == nullptr && group == api::kGroup) kind = api::FindKindByPlural(resource);
  if (services) kind = api::FindKind("Job");
  if (kind == nullptr) {
    return {false, "Tessera serves no resource \"" + resource + "\" in group \"" + group + "\""};
  }
  if (who.role != Principal::Role::kNamespace && group != api::kGroup) {
    return {false, "the Kubernetes kinds' paths are for the admin and namespace tokens"};
  }
  std::optional<Verb> v;
  if (verb == "get" || verb == "list") v = Verb::kRead;
  if (verb == "watch") v = Verb::kWatch;
  if (verb == "create" || verb == "update" || verb == "patch") v = Verb::kWrite;
  if (verb == "delete" || verb == "deletecollection") v = Verb::kDelete;
  const std::optional<std::string> in =
      kind->namespaced && !ns.empty() ? std::optional<std::string>(ns) : std::nullopt;
  const std::optional<std::string> named =
      name.empty() ? std::nullopt : std::optional<std::string>(name);
  std::vector<Verb> verbs;
  if (v) {
    verbs = {*v};
  } else if (verb == "*") {
    verbs = {Verb::kRead, Verb::kWatch, Verb::kWrite, Verb::kDelete};
  } else {
    return {false, "verb \"" + verb + "\" is not one Tessera grants"};
  }
  for (Verb each : verbs) {
    if (Status s = Authorize(who, *kind, in, named, each); !s.ok()) return {false, s.message()};
  }
  return {true, "allowed by the token's scope"};
}

}  // namespace

std::optional<HttpResponse> ApiServer::Reviews(const HttpRequest& req, const Principal& who) {
  const bool access = req.path == kAccessReviews;
  bool subject = false;
  for (std::string_view p : kSubjectReviews) subject = subject || req.path == p;
  if (!access && !subject) return std::nullopt;
  if (req.method != "POST") {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed", "a review is created with POST"));
  }
  auto body = api::ParseJson(req.body);
  if (!body.ok()) return Error(body.status());
  if (!body->is_object()) return Error(InvalidArgument("body: must be an object"));
  json out = *body;
  out["metadata"] = {{"creationTimestamp", nullptr}};
  if (subject) {
    out["apiVersion"] = std::string(req.path).substr(6, req.path.rfind('/') - 6);
    out["kind"] = "SelfSubjectReview";
    out["status"] = {{"userInfo", UserInfo(who)}};
    return Json(201, out);
  }
  out["apiVersion"] = "authorization.k8s.io/v1";
  out["kind"] = "SelfSubjectAccessReview";
  const json& spec = Member(*body, "spec");
  if (const json& attrs = Member(spec, "resourceAttributes"); attrs.is_object()) {
    const auto [allowed, reason] = MayDo(who, attrs);
    out["status"] = {{"allowed", allowed}, {"reason", reason}};
  } else if (const json& paths = Member(spec, "nonResourceAttributes"); paths.is_object()) {
    // Discovery, the version and health are open to every valid token (system:discovery).
    const std::string path = Str(paths, "path");
    const bool open = Str(paths, "verb") == "get" &&
                      (path == "/api" || path.starts_with("/api/") || path == "/apis" ||
                       path.starts_with("/apis/") || path == "/version" || path == "/healthz" ||
                       path == "/readyz" || path.starts_with("/openapi"));
    out["status"] = {{"allowed", open},
                     {"reason", open ? "discovery is open to every token" : "not granted"}};
  } else {
    return Error(
        InvalidArgument("spec: name resourceAttributes or nonResourceAttributes (what to check)"));
  }
  return Json(201, out);
}

}  // namespace tessera::server
