// What the stages of the REST pipeline of every served kind share (kube_api.cc: routing, reads,
// deletes; kube_write.cc: creates, replaces, patches, server-side apply; tessera_api.cc: the
// hooks of Tessera's own kinds): the parsed path, the request's context, the stored objects a
// served object makes, and a write as it is made.
#ifndef TESSERA_SERVER_KUBE_CALL_H_
#define TESSERA_SERVER_KUBE_CALL_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/kinds.h"
#include "api/kube_kinds.h"
#include "api/patch.h"
#include "server/auth.h"
#include "server/http_server.h"
#include "store/store.h"

namespace tessera::server {

// A parsed path of a served Kubernetes kind: /api/v1/... or /apis/{group}/{version}/..., then
// [namespaces/{ns}/]{plural}[/{name}].
struct KubeRoute {
  const api::KubeKind* kind = nullptr;
  std::optional<std::string> ns;
  std::optional<std::string> name;
  bool log = false;       // pods/{name}/log
  bool eviction = false;  // pods/{name}/eviction
  bool exec = false;      // pods/{name}/exec
  bool attach = false;    // pods/{name}/attach
  bool status = false;    // {plural}/{name}/status: the object, read (Tessera writes status)
};

// One request to a Kubernetes kind's path, as every stage of its pipeline reads it.
struct KubeCall {
  const HttpRequest& req;
  const Principal& who;
  const KubeRoute& route;
  const api::KubeKind& kind;
  const api::KindInfo& stored_kind;  // the Tessera kind its objects are stored as
  std::optional<std::string> stored_ns;
  // A list's revision (ListRevision): its objects as they were then.
  std::optional<int64_t> list_at;
};

// The stored objects made from a kind's ns/name, in the store's order; each with its version.
struct KubeMade {
  nlohmann::json obj;  // served form
  store::ObjectKey key;
  int64_t version = 0;
};

// A write (create, replace, patch, apply) as its stages make it.
struct KubeWriting {
  std::optional<api::PatchType> patch_type;
  bool apply = false;  // server-side apply: the manager's whole intent, merged
  bool force = false;
  bool create = false;
  std::string manager;
  std::string ns;                                         // the path's namespace
  std::vector<KubeMade> before;                           // what the object made until now
  nlohmann::json doc;                                     // the document to write
  std::optional<std::vector<api::ManagedEntry>> applied;  // who owns which field
};

// `plural "name"`, as Kubernetes' messages name an object.
std::string Named(const api::KubeKind& kind, const std::string& name);

// The Kubernetes kinds whose objects are each one Tessera Job of their own name, which
// Kubernetes keeps in separate name spaces: core/v1 Pods and batch/v1 Jobs.
bool SharesJobNames(const api::KubeKind& kind);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_KUBE_CALL_H_
