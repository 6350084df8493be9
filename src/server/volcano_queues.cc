// Volcano's queue states (Volcano's docs/design/queue/queue-state-management.md): a
// bus.volcano.sh Command opens or closes a Volcano Queue, which is its Tessera Queue's stopPolicy
// (Hold while closed: nothing new is admitted, what runs keeps running); a queue that is not
// Open refuses new Jobs and PodGroups as Volcano's admission webhooks do; its state (Open,
// Closing while PodGroups are in it, Closed) is read from the Queue view.
#include <algorithm>

#include "api/json_read.h"
#include "api/json_text.h"
#include "api/kube_kinds.h"
#include "api/kube_table.h"
#include "api/manifest.h"
#include "api/queue_views.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"

namespace tessera::server {

namespace {

constexpr char kCommandsOf[] = "commands.bus.volcano.sh";

// The queue a Job or PodGroup (Tessera kinds) goes to: its spec.queue, or for a Job that joins
// a PodGroup without one, the group's (as Volcano's pod webhook checks the group's queue).
struct Destination {
  std::string queue;
  std::string field;  // what names it: spec.queue or spec.podGroup
};

}  // namespace

Status ApiServer::JobsAndPodGroups(std::vector<json>* jobs, std::vector<json>* pod_groups) {
  auto j = store_->List("Job", std::nullopt);
  if (!j.ok()) return j.status();
  for (const store::StoredObject& o : *j) jobs->push_back(Served(o));
  auto g = store_->List("PodGroup", std::nullopt);
  if (!g.ok()) return g.status();
  for (const store::StoredObject& o : *g) pod_groups->push_back(Served(o));
  return Status::Ok();
}

Status ApiServer::VolcanoCommandWrites(const Principal& who, const api::VolcanoCommand& cmd,
                                       std::vector<store::Write>* writes,
                                       std::vector<api::ObjectId>* ids,
                                       std::vector<store::Write>* events) {
  TESSERA_RETURN_IF_ERROR(
      Authorize(who, *api::FindKind("Queue"), std::nullopt, cmd.queue, Verb::kWrite));
  if (cmd.queue == "default") {
    return InvalidArgument(
        "target.name: Volcano's default queue is Tessera's work without a queue, which is "
        "always open; open or close a Queue of your own");
  }
  const store::ObjectKey key{"Queue", "", cmd.queue};
  // The queue as this request leaves it: written by it already, else as stored.
  auto written = std::find_if(writes->begin(), writes->end(), [&](const store::Write& w) {
    return w.key == key && w.op != store::Write::Op::kDelete;
  });
  json queue;
  std::optional<int64_t> version;
  if (written != writes->end()) {
    queue = json::parse(written->body);
  } else {
    auto got = store_->Get(key);
    if (!got.ok()) return got.status();
    if (!got->has_value()) {
      return NotFound("target.name: queues.scheduling.volcano.sh \"" + cmd.queue + "\" not found");
    }
    queue = json::parse((*got)->body);
    version = (*got)->version;
  }
  if (Str(Member(Member(queue, "metadata"), "annotations"), "tessera.io/volcano-queue") != "true") {
    return InvalidArgument("target.name: queue " + cmd.queue +
                           " is not a Volcano Queue (it is a Kueue ClusterQueue or a Tessera "
                           "Queue): stop it with its spec.stopPolicy");
  }
  // As Volcano's controller: a command that changes nothing writes nothing and tells nothing.
  if (api::VolcanoQueueClosed(queue) == cmd.close) return Status::Ok();
  json& spec = queue["spec"];
  if (!spec.is_object()) spec = json::object();
  if (cmd.close) {
    spec["stopPolicy"] = "Hold";
  } else {
    spec.erase("stopPolicy");
  }
  if (written != writes->end()) {
    written->body = StoredBody(queue);
  } else {
    writes->push_back({store::Write::Op::kPut, key, StoredBody(queue), version});
    ids->push_back(api::IdOf(queue));
  }
  events->push_back(EventWrite("Queue", "", cmd.queue, "Normal",
                               cmd.close ? "CloseQueue" : "OpenQueue",
                               cmd.close ? "Close queue succeed" : "Open queue succeed"));
  return Status::Ok();
}

HttpResponse ApiServer::VolcanoCommands(const HttpRequest& req, const Principal& who,
                                        const std::optional<std::string>& ns,
                                        const std::optional<std::string>& name) {
  const api::KubeKind& kind = *api::FindKubeKind("bus.volcano.sh", "v1alpha1", "commands");
  if (req.method == "GET") {
    if (name) return Error(NotFound(std::string(kCommandsOf) + " \"" + *name + "\" not found"));
    const std::string version = std::to_string(store_->Revision());
    if (api::WantsTable(req.accept))
      return TableReply(req, api::KubeTable(kind, {}, version, clock_()));
    return Json(200, {{"kind", "CommandList"},
                      {"apiVersion", kind.GroupVersion()},
                      {"metadata", {{"resourceVersion", version}}},
                      {"items", json::array()}});
  }
  if (req.method != "POST" || name) {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed",
                            "a Command is carried out when it is created and is not kept; "
                            "create another"));
  }
  auto body = api::ParseJson(req.body);
  if (!body.ok()) return Error(body.status());
  json doc = std::move(body).value();
  if (!doc.is_object()) return Error(InvalidArgument("body: must be an object"));
  if (!doc.contains("apiVersion")) doc["apiVersion"] = kind.GroupVersion();
  if (!doc.contains("kind")) doc["kind"] = kind.kind;
  const std::string path_ns = ns.value_or("default");
  const std::string doc_ns = Str(Member(doc, "metadata"), "namespace");
  if (!doc_ns.empty() && doc_ns != path_ns) {
    return Error(InvalidArgument("metadata.namespace: \"" + doc_ns +
                                 "\" does not match the path's namespace \"" + path_ns + "\""));
  }
  std::vector<std::string> warnings;
  auto cmd = api::ParseVolcanoCommand(doc, path_ns, &warnings);
  if (!cmd.ok()) return Error(cmd.status());
  std::vector<store::Write> writes, events;
  std::vector<api::ObjectId> ids;
  if (Status s = VolcanoCommandWrites(who, *cmd, &writes, &ids, &events); !s.ok()) {
    return Error(s);
  }
  json out = cmd->doc;
  json& meta = out["metadata"];
  if (cmd->name.empty()) {
    // As kube-apiserver: generateName and five random characters.
    meta["name"] = cmd->generate_name + NewUid().substr(0, 5);
  }
  meta.erase("generateName");
  meta["uid"] = NewUid();
  meta["creationTimestamp"] = FormatTime(clock_());
  meta["resourceVersion"] = std::to_string(store_->Revision());
  if (!DryRun(req)) {
    writes.insert(writes.end(), events.begin(), events.end());
    auto versions = Commit(writes);
    if (!versions.ok()) return Error(versions.status());
    if (!versions->empty()) meta["resourceVersion"] = std::to_string(versions->back());
  }
  HttpResponse r = Json(201, out);
  for (const std::string& w : warnings) {
    r.headers.emplace_back("Warning", WarningHeader("Command: " + w));
  }
  return r;
}

Status ApiServer::CheckVolcanoQueueOpen(const json& obj, const json* old) {
  const std::string kind = Str(obj, "kind");
  if (kind != "Job" && kind != "PodGroup") return Status::Ok();
  const std::string ns = Str(Member(obj, "metadata"), "namespace");
  auto destination = [&](const json& o) {
    const json& spec = Member(o, "spec");
    if (!Str(spec, "queue").empty()) return Destination{Str(spec, "queue"), "spec.queue"};
    if (kind == "Job" && !Str(spec, "podGroup").empty()) {
      return Destination{"", "spec.podGroup"};
    }
    return Destination{};
  };
  Destination to = destination(obj);
  if (to.field.empty()) return Status::Ok();
  // Work already in a queue stays when it closes; only a new destination is checked.
  if (old != nullptr) {
    const json& a = Member(*old, "spec");
    const json& b = Member(obj, "spec");
    if (Member(a, "queue") == Member(b, "queue") &&
        Member(a, "podGroup") == Member(b, "podGroup")) {
      return Status::Ok();
    }
  }
  if (to.queue.empty()) {
    auto group = store_->Get({"PodGroup", ns, Str(Member(obj, "spec"), "podGroup")});
    if (!group.ok()) return group.status();
    if (!group->has_value()) return Status::Ok();
    to.queue = Str(Member(json::parse((*group)->body), "spec"), "queue");
    if (to.queue.empty()) return Status::Ok();
  } else if (kind == "Job") {
    // A LocalQueue of the name in the Job's namespace takes it (Kueue), before a Volcano Queue.
    auto local = store_->Get({"LocalQueue", ns, to.queue});
    if (!local.ok()) return local.status();
    if (local->has_value()) return Status::Ok();
  }
  auto got = store_->Get({"Queue", "", to.queue});
  if (!got.ok()) return got.status();
  if (!got->has_value()) return Status::Ok();
  const json queue = json::parse((*got)->body);
  if (!api::VolcanoQueueClosed(queue)) return Status::Ok();
  std::vector<json> jobs, pod_groups;
  TESSERA_RETURN_IF_ERROR(JobsAndPodGroups(&jobs, &pod_groups));
  json view = {{"metadata", {{"name", to.queue}}}};
  api::AddVolcanoQueueStatus(queue, jobs, pod_groups, &view);
  return InvalidArgument(to.field + ": can only submit " + (kind == "Job" ? "job" : "PodGroup") +
                         " to queue with state `Open`, queue `" + to.queue + "` status is `" +
                         Str(view["status"], "state") + "`");
}

}  // namespace tessera::server
