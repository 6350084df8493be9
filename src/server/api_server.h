// The REST API of the control plane over the durable store. Tessera's kinds are the group
// tessera.io, version v1; the core group and Kubernetes', Kueue's and Volcano's groups serve
// their kinds as views of them (G = /apis/tessera.io/v1):
//
//   GET    /healthz, /readyz, /version               (no token)
//   GET    /api, /api/v1, /apis, /apis/{group}[/{version}]
//                                                    discovery documents (any valid token)
//   GET    /openapi/v2, /openapi/v3[/{gv}]           OpenAPI (api/openapi.h)
//   GET    /api/v1/nodes[/{name}]                    core/v1 Nodes (a meta.k8s.io/v1 Table when
//                                                    the Accept header asks as=Table)
//   *      /api/v1/..., /apis/{group}/{version}/...  Pods, batch/v1 Jobs, Kueue and Volcano
//                                                    kinds ... (kube_api.cc, api/kube_kinds.h)
//   GET    G/{plural}                                list (all namespaces for namespaced kinds)
//   GET    G/namespaces/{ns}/{plural}                list in a namespace
//   GET    .../{plural}/{name}                       get
//   POST   .../{plural}                              create (409 when it exists)
//   PUT    .../{plural}/{name}                       replace; metadata.resourceVersion, when
//                                                    set, must be current (409 when stale)
//   PATCH  .../{plural}/{name}                       merge, JSON or strategic merge patch
//   DELETE .../{plural}/{name}                       delete
//   POST   G/apply                                   server-side apply of one object or
//                                                    {"items": [...]}: create or replace each,
//                                                    all or nothing; unchanged objects keep
//                                                    their resourceVersion
//   POST   G/tokens  {"namespace": NS}               (admin) a namespace-scoped token
//   POST   G/tokens  {"role": "agent", "node": N}    (admin) an agent token bound to node N;
//                                                    (a join token) the same, once per node
//   POST   G/tokens  {"role": "agent"}               (admin) a join token for node agents
//   POST   G/tokens  {"role": "metrics"}             (admin) a token that reads /metrics only
//   GET    G/tokens                                  (admin) every token, without secrets
//   DELETE G/tokens/{id}                             (admin) revokes it at once
//   GET    G/namespaces/{ns}/jobs/{name}/logs[?pod=P][&tailLines=N][&follow=1]
//                                                    the job's output as text (all its pods,
//                                                    lines prefixed [pod], unless one is named);
//                                                    follow streams new lines
//   POST   G/namespaces/{ns}/jobs/{name}/logs?pod=P  (agents) appends output
//   GET    <list path>?watch=1[&resourceVersion=N][&timeoutSeconds=S]
//                                                    a stream of newline-separated events
//                                                    {"type": ADDED|MODIFIED|DELETED, "object"}
//                                                    after revision N; without N (or N=0) the
//                                                    current objects come first as ADDED; a
//                                                    compacted N answers 410
//
//   GET    G/usage?by=namespace|queue|job[&since=T][&until=T]
//                                                    GPU-hours, idle GPU-hours and cost from
//                                                    the accounting ledger; T is RFC 3339 or a
//                                                    duration before now ("24h"); since defaults
//                                                    to the beginning, until to now; a
//                                                    namespace token sees its namespace only;
//                                                    &step=D adds the figures per interval D
//   GET    G/gpus[?node=N]                           (admin) every GPU as the scheduler
//                                                    offers it: sharing, health, cordon
//   GET    G/pendingworkloads[?queue=Q][&namespace=NS][&limit=L][&offset=O]
//                                                    waiting Jobs in their queues' order, with
//                                                    the last cycle's reasons (a namespace
//                                                    token: its own)
//   GET    G/quotas                                  (admin) each queue's and cohort's quota,
//                                                    use, borrowing, lending, share
//   GET    /ui/...                                   the web console (no token: no data)
//   GET    /metrics                                  Prometheus text: scheduler metrics and GPU
//                                                    telemetry under DCGM field names (admin or
//                                                    metrics token; a namespace token gets the
//                                                    series labelled with its namespace)
//
// Lists and watches take `labelSelector`; lists `fieldSelector` (metadata.name,
// metadata.namespace). Every request needs "Authorization: Bearer <token>":
// unknown, revoked or missing -> 401; anything outside the token's role -> 403 (the matrix is in
// docs/SECURITY.md). Errors are Kubernetes Status objects naming the field at fault; nothing is
// written on error.
#ifndef TESSERA_SERVER_API_SERVER_H_
#define TESSERA_SERVER_API_SERVER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/kinds.h"
#include "api/kube_kinds.h"
#include "api/object.h"
#include "api/time.h"
#include "server/api_common.h"
#include "server/auth.h"
#include "server/change_feed.h"
#include "server/control_plane.h"
#include "server/exec_hub.h"
#include "server/files.h"
#include "server/http_server.h"
#include "server/lease_book.h"
#include "server/log_store.h"
#include "server/metrics.h"
#include "server/object_cache.h"
#include "server/usage_book.h"
#include "store/store.h"

namespace tessera::api {
struct VolcanoCommand;
}  // namespace tessera::api

namespace tessera::server {

class Accountant;
class EventCache;

// Tessera's own limits per namespace, beside any ResourceQuota's (0: none). Counted when a
// client writes: the pods of the namespace's unfinished Jobs, and its Jobs, PodGroups,
// LocalQueues and NamespaceQuotas.
struct NamespaceLimits {
  int64_t pods = 1'000'000;
  int64_t objects = 250'000;
};

// The Namespace label by which the admin allows tasks to run as root in it.
inline constexpr std::string_view kPodSecurityEnforce = "pod-security.kubernetes.io/enforce";

struct KubeCall;     // a request to a Kubernetes kind's path (kube_api.cc)
struct KubeMade;     // a stored object made from a Kubernetes kind's object
struct KubeWriting;  // a write to a Kubernetes kind as its stages make it

// The stored object a write replaces, read from the store and parsed at most once for the
// write's checks (AuthorizeWrite, KeepSystemFields): both see one version, and an agent's
// report of a pod's state costs one read and one parse, not two.
class StoredRead {
 public:
  // With `cache`, the parse is the cache's document where it holds the version read (an agent's
  // report of its pods checks the Job the scheduling loop keeps parsed).
  StoredRead(store::Store& store, store::ObjectKey key, ObjectCache* cache = nullptr)
      : store_(store), key_(std::move(key)), cache_(cache) {}
  // The object as the caller has already read it (nullopt: there is none).
  StoredRead(store::Store& store, store::ObjectKey key, std::optional<store::StoredObject> read,
             ObjectCache* cache = nullptr)
      : store_(store), key_(std::move(key)), cache_(cache), object_(std::move(read)) {}
  // The stored object; nullopt when there is none.
  Result<const std::optional<store::StoredObject>*> Object();
  // The stored object parsed; null when there is none. An unreadable one is an error.
  Result<const nlohmann::json*> Parsed();

 private:
  store::Store& store_;
  const store::ObjectKey key_;
  ObjectCache* const cache_;
  std::optional<Result<std::optional<store::StoredObject>>> object_;
  std::optional<nlohmann::json> parsed_;
  std::shared_ptr<const nlohmann::json> cached_;  // the cache's, of the version read
};

class ApiServer {
 public:
  // Whether `path` names a Kubernetes kind Kube serves (server/kube_api.cc).
  static bool NamesKubeKind(std::string_view path);
  // Serves `plane`, which outlives it.
  explicit ApiServer(ControlPlane& plane);
  ~ApiServer();
  // A server that owns a control plane opened on `data_dir` (ControlPlane::Open), for a
  // process that only serves it (tests, tools).
  static Result<std::unique_ptr<ApiServer>> Open(
      const std::string& data_dir, ControlPlane::StoreOpener open_store = ControlPlane::Sqlite());

  // Safe to call from several threads at once. Requests run side by side; a write is parsed,
  // patched and checked outside any lock, then committed against the versions it read; when
  // another write landed in between, it runs again (at most 5 times, then 409).
  HttpResponse Handle(const HttpRequest& request);

  // Who sent `request`, for the HTTP server's limits per client (fairness.h): the admin is
  // exempt, an agent has its own limits, other tokens are tenants (with their namespace), and
  // a request without a valid token is anonymous.
  ClientId Identify(const HttpRequest& request);

  // The control plane this server serves.
  ControlPlane& plane() { return plane_; }

  void set_namespace_limits(NamespaceLimits limits) { namespace_limits_ = limits; }

  // How long a node's heartbeat stays fresh: its core/v1 Ready condition is Unknown after.
  void set_node_grace_ms(int64_t ms) { node_grace_ms_ = ms; }

  // The least time between two BOOKMARK events of a watch that allows them (Kubernetes: about
  // a minute). A bookmark goes out when a commit the watch does not show arrives after it.
  void set_bookmark_interval_ms(int64_t ms) { bookmark_interval_ms_ = ms; }

  // The wall clock in milliseconds since the epoch (replaceable in tests).
  // The server starts anew at the clock's time (the lease book's start: lease_book.h).
  void set_clock(std::function<int64_t()> clock) {
    clock_ = std::move(clock);
    leases_.set_started(clock_());
  }

 private:
  // Commits through the control plane, noting a conflict for Handle's retries.
  Result<std::vector<int64_t>> Commit(std::span<const store::Write> writes);
  // An apply's writes: in one transaction, or, on a shared store whose transaction cannot hold
  // them all (etcd's 128 keys or 1.5 MiB), in transactions of at most kApplyChunk writes, in
  // order, each all or nothing; `chunks` says how many (a failure names what was written).
  Result<std::vector<int64_t>> CommitApply(std::span<const store::Write> writes, int* chunks);
  // One request, without the retry of Handle, after the public paths and authentication: a
  // protobuf body is read as the JSON it encodes, then discovery, and each family of paths.
  HttpResponse HandleOnce(const HttpRequest& req);
  HttpResponse Protobuf(const HttpRequest& req, const Principal& who);
  std::optional<HttpResponse> ServeDiscovery(const HttpRequest& req);
  HttpResponse ServeMetrics(const Principal& who);
  // Tessera's own kinds (tessera_api.cc): one object or a list, and /apply of a manifest.
  HttpResponse TesseraObjects(const HttpRequest& req, const Principal& who);
  // The hooks of the REST stages for Tessera's own kinds: the objects a read serves, and a
  // create, replace or patch of one object.
  // Each object the read serves, in the store's order, to `each`.
  Status NativeObjects(const KubeCall& c, const std::function<void(nlohmann::json&&)>& each);
  HttpResponse NativeWrite(const KubeCall& c);
  HttpResponse ApplyDocuments(const HttpRequest& req, const Principal& who);
  // GET (read, follow) and POST (ship, agents) of
  // /apis/tessera.io/v1/namespaces/{ns}/jobs/{name}/logs.
  // A Job's logs (`runs`: which runs of each pod's container; Tessera's own jobs/logs reads
  // all, unless asked for the previous run).
  // `explain`, when set, says in the reader's terms why a pod's log could not be read.
  using LogReadError = std::function<Status(const Status&)>;
  HttpResponse Logs(const HttpRequest& req, const std::string& ns, const std::string& job,
                    LogStore::Runs runs = LogStore::Runs::kAll, const LogReadError& explain = {});

  HttpResponse Usage(const HttpRequest& req, const Principal& who);
  // GET /apis/tessera.io/v1/gpus (gpu_list.cc): every GPU as the scheduler offers it.
  HttpResponse Gpus(const HttpRequest& req, const Principal& who);
  // GET /apis/tessera.io/v1/pendingworkloads (pending_workloads.cc): the waiting Jobs in their
  // queues' order, from this replica's last scheduling cycle.
  HttpResponse PendingWorkloads(const HttpRequest& req, const Principal& who);
  // GET /apis/tessera.io/v1/quotas (pending_workloads.cc): each queue's and cohort's quota and
  // use after this replica's last cycle.
  HttpResponse Quotas(const Principal& who);
  // `tessera exec` (exec_api.cc): POST /apis/tessera.io/v1/namespaces/{ns}/jobs/{job}/exec
  // opens a session on a running pod (admin, the namespace's token); GET
  // /apis/tessera.io/v1/execs/{id} streams its output to the token that opened it; GET
  // /apis/tessera.io/v1/nodes/{node}/execs (long poll), POST .../execs/{id}/output and
  // .../execs/{id}/end are the node's agent's. nullopt when the path is none of these.
  std::optional<HttpResponse> Exec(const HttpRequest& req, const Principal& who);
  HttpResponse ExecOpen(const HttpRequest& req, const Principal& who, const std::string& ns,
                        const std::string& job);
  HttpResponse ExecToken(const HttpRequest& req, const Principal& who, const std::string& ns,
                         const std::string& job);
  HttpResponse ExecSession(const HttpRequest& req, const Principal& who);
  // The stored Job ns/job (NotFound when there is none).
  Result<nlohmann::json> ReadJob(const std::string& ns, const std::string& job);
  // The Kubernetes, Kueue and Volcano kinds at their own groups (api/kube_kinds.h): get, list,
  // create, update, patch and delete of the objects their manifests translate into. nullopt
  // when the path names none of them. The stages of its pipeline follow, over the request's
  // KubeCall (kube_api.cc).
  std::optional<HttpResponse> Kube(const HttpRequest& req, const Principal& who);
  // The stored objects made from the call's kind ns/name (every name when `name` is empty).
  Result<std::vector<KubeMade>> KubeMadeFrom(const KubeCall& c, const std::string& ns,
                                             const std::string& name);
  // One view per source object (a ConfigMap makes several GpuSharingConfigs).
  std::vector<nlohmann::json> KubeViews(const KubeCall& c, const std::vector<KubeMade>& made);
  Status KubeAddStatus(const KubeCall& c, const std::vector<KubeMade>& made,
                       std::vector<nlohmann::json>* found);
  Status KubePods(const KubeCall& c, const std::string& name,
                  const std::function<void(nlohmann::json&&)>& each);
  HttpResponse KubeServe(KubeCall& c);  // the stages of every kind, Tessera's own included
  HttpResponse KubeRead(KubeCall& c);   // get, list
  HttpResponse KubeWatch(const KubeCall& c, const std::optional<api::LabelSelector>& selector,
                         const std::optional<api::FieldSelector>& fields);
  std::optional<HttpResponse> KubeCheckPodWrite(const KubeCall& c);
  HttpResponse KubeDelete(const KubeCall& c);
  HttpResponse KubeDeleteCollection(const KubeCall& c);
  HttpResponse KubeWrite(const KubeCall& c);  // create, replace, patch, apply
  std::optional<HttpResponse> KubeDocument(const KubeCall& c, KubeWriting& wr);
  std::optional<HttpResponse> KubeCheckDocument(const KubeCall& c, KubeWriting& wr);
  std::optional<HttpResponse> KubeWritesOf(const KubeCall& c, KubeWriting& wr,
                                           std::vector<store::Write>* writes,
                                           std::vector<api::ObjectId>* ids,
                                           std::vector<std::vector<std::string>>* notes,
                                           size_t* primary);
  // core/v1 Events of the Tessera Events in `ns` (every namespace without one), named `name`
  // when it is not empty, each naming its object as the Kubernetes API serves it.
  Result<std::vector<nlohmann::json>> EventViews(const std::optional<std::string>& ns,
                                                 const std::string& name,
                                                 std::optional<int64_t> at = std::nullopt);
  // One stored Event as core/v1 shows it, about the object it names (looked up through
  // `refs`, each object once).
  Result<nlohmann::json> EventView(const store::StoredObject& o,
                                   std::map<store::ObjectKey, std::optional<api::ObjectRef>>* refs);
  // Kueue Workloads of the Jobs in `ns` (every namespace without one) that name a queue.
  Result<std::vector<nlohmann::json>> Workloads(const std::optional<std::string>& ns,
                                                const std::string& name,
                                                std::optional<int64_t> at = std::nullopt);
  // The stored objects of `kind` (in `ns` when given) now, or as they were at revision `at`.
  Result<std::vector<store::StoredObject>> ListStored(std::string_view kind,
                                                      const std::optional<std::string>& ns,
                                                      std::optional<int64_t> at);
  // core/v1 Namespaces, read and deleted: those written, those in use and default for the
  // admin, its own for a namespace token. Deleting one deletes every object in it, in one
  // write (the admin's; default, kube-system and kube-public stay). Written through Kube.
  // The namespaces `who` sees (an admin: those written, those in use and default; a namespace
  // token: its own), as views of kind Namespace and version 0, by name.
  Result<std::vector<store::StoredObject>> NamespaceViews(const Principal& who);
  // A watch of Namespaces: those written and those in use, as objects in them come and go.
  HttpResponse WatchNamespaces(const HttpRequest& req, const Principal& who);
  HttpResponse Namespaces(const HttpRequest& req, const Principal& who,
                          const std::optional<std::string>& name);
  // Every namespaced object in `ns` (every namespace when empty).
  Result<std::vector<store::StoredObject>> NamespaceContents(const std::string& ns);
  // The core/v1 view of a namespace never written that is there (default, or holding
  // objects); null when it is not.
  Result<nlohmann::json> ImplicitNamespace(const std::string& name);
  // The GPU sharing configs (those that decode), in name order, as the scheduler applies them.
  std::vector<api::GpuSharingConfigSpec> SharingConfigs();
  // PATCH or PUT of a core/v1 Node view: labels, annotations, cordon and taints reach the
  // Tessera Node (admin only).
  HttpResponse NodeChange(const HttpRequest& req, const Principal& who, const std::string& name);
  // Kueue's counts and flavor usage on ClusterQueue and LocalQueue views, from every Job.
  Status AddKueueStatus(std::vector<nlohmann::json>* views);
  // Warning events (reason NotActedOn) for the objects `ids` whose `notes` are not empty,
  // appended to `writes`; returns the notes as "<Kind> [<ns>/]<name>: <note>".
  std::vector<std::string> NotActedOn(const std::vector<api::ObjectId>& ids,
                                      const std::vector<std::vector<std::string>>& notes,
                                      std::vector<store::Write>* writes);
  // The write of an Event about `kind` `about` in `ns` (tessera-system for cluster-wide
  // objects), named after it, the time and a sequence number.
  store::Write EventWrite(std::string_view kind, const std::string& ns, const std::string& about,
                          std::string_view type, std::string_view reason,
                          const std::string& message);
  // Volcano's queue states (volcano_queues.cc). The writes that carry out the bus.volcano.sh
  // Command `cmd` of `who` (who must be allowed to write the Queue): the Volcano Queue's
  // Tessera Queue with its stopPolicy Hold (CloseQueue) or without one (OpenQueue), changed in
  // place when `writes` already writes it, else appended to `writes` and its id to `ids`; and
  // an event on it, appended to `events`. Nothing when the queue is in that state already.
  Status VolcanoCommandWrites(const Principal& who, const api::VolcanoCommand& cmd,
                              std::vector<store::Write>* writes, std::vector<api::ObjectId>* ids,
                              std::vector<store::Write>* events);
  // POST (carried out at once) and GET (none are kept, as Volcano's controller deletes each it
  // has handled) of bus.volcano.sh Commands at /apis/bus.volcano.sh/v1alpha1.
  HttpResponse VolcanoCommands(const HttpRequest& req, const Principal& who,
                               const std::optional<std::string>& ns,
                               const std::optional<std::string>& name);
  // SelfSubjectAccessReview and SelfSubjectReview (server/access_review.cc); nullopt for any
  // other path.
  std::optional<HttpResponse> Reviews(const HttpRequest& req, const Principal& who);
  // The pods' subresources (server/pod_subresources.cc): GET pods/{pod}/log in `ns`, and POST
  // pods/{pod}/eviction (a policy/v1 Eviction).
  HttpResponse PodLog(const HttpRequest& req, const Principal& who, const std::string& ns,
                      const std::string& pod);
  HttpResponse Evict(const HttpRequest& req, const std::string& ns, const std::string& pod);
  // pods/{name}/exec over a WebSocket (v5/v4.channel.k8s.io), as kubectl exec opens it: a
  // session of the exec hub, its output framed as Kubernetes' stream protocol (exec_api.cc).
  HttpResponse PodExec(const HttpRequest& req, const Principal& who, const std::string& ns,
                       const std::string& pod);
  // metrics.k8s.io (server/resource_metrics.cc): NodeMetrics and PodMetrics from what the
  // agents report, and the agents' reports (PUT /apis/tessera.io/v1/nodes/{name}/usage);
  // nullopt for any other path.
  std::optional<HttpResponse> ResourceMetrics(const HttpRequest& req, const Principal& who);
  // pods/{name}/attach over a WebSocket, as kubectl attach opens it: the running pod's output
  // from now on, on the stream protocol's stdout channel, until the pod ends (its input is not
  // attached: a task has no terminal).
  HttpResponse PodAttach(const HttpRequest& req, const Principal& who, const std::string& ns,
                         const std::string& pod);
  // A pod of namespace `ns` by its Kubernetes name: its Job's name and its view; nullopt when
  // there is none.
  Result<std::optional<std::pair<std::string, nlohmann::json>>> FindPodOf(const std::string& ns,
                                                                          const std::string& pod);
  // Volcano's admission rule: a Job or PodGroup `obj` (Tessera kinds) created in, or moved to,
  // a Volcano Queue that is not Open is refused with Volcano's words. `old`: the stored object,
  // null on create.
  Status CheckVolcanoQueueOpen(const nlohmann::json& obj, const nlohmann::json* old);
  // The Jobs (served form) and PodGroups (stored) that Volcano Queues' states are counted from.
  Status JobsAndPodGroups(std::vector<nlohmann::json>* jobs,
                          std::vector<nlohmann::json>* pod_groups);
  // The core group (/api/v1): Kubernetes' own kinds as views of Tessera's objects.
  HttpResponse Core(const HttpRequest& req, const Principal& who);
  // core/v1 services (`rest`: the path after /api/v1): none, read; writes refused saying why.
  // nullopt when `rest` names no services.
  std::optional<HttpResponse> Services(const HttpRequest& req, const Principal& who,
                                       std::string_view rest);
  // /apis/tessera.io/v1/tokens: create (POST), list (GET), revoke (DELETE
  // /apis/tessera.io/v1/tokens/{id}).
  HttpResponse Tokens(const HttpRequest& req, const Principal& who);
  // Object-level rules for a write of `obj` by `who` (see docs/SECURITY.md). An agent's write
  // of a Job keeps the stored spec and metadata: it reports status only.
  Status AuthorizeWrite(const Principal& who, nlohmann::json* obj, StoredRead& stored);
  // What a write of one Tessera kind checks and keeps beyond what every write does, after
  // kube-apiserver's registry strategies (write_strategy.cc). AuthorizeWrite runs `tenant` and
  // `agent`, KeepSystemFields `user` and `keep`.
  struct WriteStrategy {
    // A namespace token's write, beyond the role matrix.
    Status (ApiServer::*tenant)(const Principal& who, const nlohmann::json& obj) = nullptr;
    // A node agent's write: whether it may, and what the server sets in it (none: agents may
    // not write the kind).
    Status (ApiServer::*agent)(const Principal& who, nlohmann::json* obj,
                               StoredRead& stored) = nullptr;
    // A write by anyone but an agent: what may not change of `stored` (null: a create), and
    // what must hold of the object.
    Status (ApiServer::*user)(const store::ObjectKey& key, const nlohmann::json& obj,
                              const nlohmann::json* stored) = nullptr;
    // What the object keeps of `stored`, whoever writes it.
    void (ApiServer::*keep)(const nlohmann::json& stored, nlohmann::json* obj) = nullptr;
  };
  // The strategy of `kind` (one without hooks for a kind that has none).
  static const WriteStrategy& StrategyOf(std::string_view kind);
  Status TenantWritesLocalQueue(const Principal& who, const nlohmann::json& obj);
  Status AgentWritesNode(const Principal& who, nlohmann::json* obj, StoredRead& stored);
  Status AgentWritesLease(const Principal& who, nlohmann::json* obj, StoredRead& stored);
  Status AgentWritesEvent(const Principal& who, nlohmann::json* obj, StoredRead& stored);
  Status AgentWritesJob(const Principal& who, nlohmann::json* obj, StoredRead& stored);
  Status UserWritesJob(const store::ObjectKey& key, const nlohmann::json& obj,
                       const nlohmann::json* stored);
  Status UserWritesPodGroup(const store::ObjectKey& key, const nlohmann::json& obj,
                            const nlohmann::json* stored);
  void KeepVolcanoQueueState(const nlohmann::json& stored, nlohmann::json* obj);
  // Reading a Job's logs (admin, its namespace) or shipping them (admin, the agent of the node
  // the named pod is bound to).
  Status AuthorizeLogs(const HttpRequest& req, const Principal& who, const std::string& ns,
                       const std::string& job);
  // Streams the changes of stored objects of `kind` (in `ns`) as watch events; `render`, when
  // set, writes the lines for one change itself (the Kubernetes views), instead of the stored
  // object filtered by `selector`. `watched` ({"apiVersion", "kind"} of what the watcher sees)
  // heads the BOOKMARK events sent when the request allows them; null sends none. With
  // `bound_to` (an agent's watch of Jobs) only the Jobs bound to that node are shown, and one
  // that leaves it as DELETED. An empty `kind` watches changes of every kind; `initial`, when
  // set, gives the objects a watch from the current state starts with (else those of `kind`).
  using InitialObjects = std::function<Result<std::vector<store::StoredObject>>()>;
  HttpResponse Watch(const HttpRequest& req, const std::string& kind,
                     const std::optional<std::string>& ns,
                     std::optional<api::LabelSelector> selector, WatchRender render,
                     nlohmann::json watched, std::optional<std::string> bound_to = std::nullopt,
                     InitialObjects initial = {});
  // An object's status and creation time are the system's: a write keeps the stored status
  // unless an admin or agent sends one, and keeps the creation time (set on creation). Fills
  // `w->body` and pins `w->expected_version` to the version read. Refuses a change to what is
  // immutable (a placed Job's tasks, queue, priority class, pod group), and a Job or PodGroup
  // sent to a Volcano Queue that is not Open (CheckVolcanoQueueOpen).
  // `stored`: the object w->key names as read for this write.
  Status KeepSystemFields(const Principal& who, nlohmann::json* obj, store::Write* w,
                          StoredRead& stored);
  // Kubernetes' quota admission for object counts: a new object in a namespace already holding
  // NamespaceLimits::objects counted objects, or a Job whose pods would take the namespace's
  // unfinished Jobs' pods past the tighter of NamespaceLimits::pods and its ResourceQuotas'
  // `pods`, is refused (403, "exceeded quota: NAME, requested: pods=N, used: pods=U, limited:
  // pods=L"). `stored`: the object being replaced, null for a create.
  Status CheckNamespaceLimits(const nlohmann::json& obj, const store::ObjectKey& key,
                              const nlohmann::json* stored);
  // A Job whose task asks for uid 0 (runAsUser: 0) is refused unless its namespace `ns` is
  // marked privileged by the admin (Kubernetes' Pod Security label kPodSecurityEnforce set to
  // privileged), as Pod Security Admission refuses a pod that runs as root.
  Status CheckRootTasks(const nlohmann::json& job, const std::string& ns);
  // After an agent's write of `job`: the logs of its pods on `node` that have ended are whole
  // (LogStore::End), so that their followers end.
  void EndFinishedLogs(const nlohmann::json& job, const std::string& node);
  // A Node as served, with status.heartbeat the later of its own and its Lease's renewTime.
  nlohmann::json WithLease(nlohmann::json node);

  std::unique_ptr<ControlPlane> owned_;  // when Open made it
  ControlPlane& plane_;
  // The parts of the plane this layer uses, named as its own.
  store::Store* store_;
  TokenAuthority& tokens_;
  ChangeFeed& feed_;
  EventCache* events_;
  LogStore logs_;
  ExecHub& exec_;
  SchedulerMetrics& metrics_;
  Accountant* accounting_;
  ObjectCache& objects_;
  LeaseBook& leases_;
  UsageBook usage_;
  std::function<int64_t()> clock_;
  std::atomic<uint64_t> event_seq_ = 0;  // names events made by apply
  int64_t node_grace_ms_ = 40'000;
  NamespaceLimits namespace_limits_;
  int64_t bookmark_interval_ms_ = 60'000;
};

using api::FormatTime;
using api::ParseTime;

}  // namespace tessera::server

#endif  // TESSERA_SERVER_API_SERVER_H_
