// The doctor's scheduler checks (api/doctor.h): queue configuration that can never admit what
// users expect, and devices the scheduler bound that the node's agent does not report.
#include <map>
#include <set>

#include "api/doctor.h"
#include "api/kinds.h"
#include "api/kinds_common.h"
#include "api/object.h"
#include "api/time.h"

namespace tessera::api {

using kinds_detail::MetaString;
using nlohmann::json;

namespace {

std::string NameOf(const json& obj) { return MetaString(obj, "name"); }
std::string NamespaceOf(const json& obj) { return MetaString(obj, "namespace"); }

// The labels a Namespace is matched by: its own and kubernetes.io/metadata.name.
json NamespaceLabels(const DoctorInput& in, const std::string& ns) {
  json labels = json::object();
  for (const json& n : in.namespaces) {
    if (NameOf(n) == ns) {
      labels = n.value("metadata", json::object()).value("labels", json::object());
    }
  }
  labels["kubernetes.io/metadata.name"] = ns;
  return labels;
}

// LocalQueues naming a Queue that does not exist, or one that does not admit their namespace.
void CheckLocalQueues(const DoctorInput& in, std::vector<Finding>* out) {
  std::map<std::string, const json*> queues;
  for (const json& q : in.queues) queues[NameOf(q)] = &q;
  std::set<std::string> pointed;
  for (const json& l : in.local_queues) {
    auto spec = DecodeLocalQueue(l);
    if (!spec.ok()) continue;
    const std::string subject = "localqueue/" + spec->namespace_name + "/" + spec->name;
    auto it = queues.find(spec->queue);
    if (it == queues.end()) {
      Finding f = MakeFinding(Severity::kCritical, "localqueue.no-queue", subject,
                              "points at queue \"" + spec->queue + "\", which does not exist");
      f.meaning = "Jobs submitted to this LocalQueue wait for ever: no queue admits them.";
      f.fix = "Create the queue (a Kueue ClusterQueue or a Tessera Queue named " + spec->queue +
              "), or point spec.clusterQueue at one that exists: tessera get queues.";
      out->push_back(std::move(f));
      continue;
    }
    pointed.insert(spec->queue);
    const json& qspec = it->second->value("spec", json::object());
    const json* sel = qspec.contains("namespaceSelector") ? &qspec["namespaceSelector"] : nullptr;
    if (sel == nullptr || sel->is_null()) continue;  // no selector: every namespace
    auto parsed = LabelSelector::FromJson(*sel, "spec.namespaceSelector");
    if (!parsed.ok() || parsed->Matches(NamespaceLabels(in, spec->namespace_name))) continue;
    Finding f = MakeFinding(
        Severity::kCritical, "queue.namespace-not-admitted", subject,
        "queue \"" + spec->queue + "\" does not admit namespace " + spec->namespace_name);
    f.evidence.push_back("queue " + spec->queue + " spec.namespaceSelector: " + sel->dump());
    const bool nil_selector = sel->dump().find("DoesNotExist") != std::string::npos &&
                              sel->dump().find("kubernetes.io/metadata.name") != std::string::npos;
    f.meaning = nil_selector
                    ? "The ClusterQueue was applied without a namespaceSelector. As in Kueue, a "
                      "nil namespaceSelector selects no namespace, so Jobs sent through this "
                      "LocalQueue are never admitted."
                    : "The queue's namespaceSelector does not match this namespace's labels, so "
                      "Jobs sent through this LocalQueue are never admitted.";
    f.fix = nil_selector ? "Set namespaceSelector: {} on the ClusterQueue to admit every namespace "
                           "(or a selector matching " +
                               spec->namespace_name + ") and apply it again."
                         : "Label the namespace to match, or widen the queue's namespaceSelector.";
    out->push_back(std::move(f));
  }
}

// GPU capacity (milli-GPUs, a card 1000) of the nodes a flavor selects.
int64_t FlavorCapacity(const core::ResourceFlavor& flavor, const std::vector<core::NodeSpec>& nodes,
                       int* matching) {
  int64_t milli = 0;
  *matching = 0;
  for (const core::NodeSpec& n : nodes) {
    bool labels = true;
    for (const auto& [k, v] : flavor.node_labels) {
      auto it = n.labels.find(k);
      labels = labels && it != n.labels.end() && it->second == v;
    }
    if (!labels) continue;
    int64_t gpus = 0;
    for (const core::GpuDevice& g : n.gpus) {
      const bool model = flavor.gpu_models.empty() ||
                         std::find(flavor.gpu_models.begin(), flavor.gpu_models.end(), g.model) !=
                             flavor.gpu_models.end();
      if (model) ++gpus;
    }
    if (!flavor.gpu_models.empty() && gpus == 0) continue;
    ++*matching;
    milli += gpus * 1000;
  }
  return milli;
}

// Flavors no node has, and nominal GPU quota beyond what a flavor's nodes hold.
void CheckFlavors(const DoctorInput& in, std::vector<Finding>* out) {
  std::vector<core::NodeSpec> nodes;
  for (const json& n : in.nodes) {
    if (auto d = DecodeNode(n); d.ok()) nodes.push_back(std::move(d).value());
  }
  // Per flavor: the queues quoting it, and their nominal GPU quota.
  std::map<std::string, std::vector<std::pair<std::string, int64_t>>> nominal;
  for (const json& q : in.queues) {
    auto spec = DecodeQueue(q);
    if (!spec.ok()) continue;
    for (const core::ResourceGroup& g : spec->resource_groups) {
      for (const core::FlavorQuotas& fq : g.flavors) {
        for (const core::ResourceQuota& r : fq.resources) {
          if (r.resource == core::QuotaResource::kGpu) {
            nominal[fq.flavor].emplace_back(spec->name, r.nominal);
          }
        }
      }
    }
  }
  for (const json& obj : in.flavors) {
    auto flavor = DecodeResourceFlavor(obj);
    if (!flavor.ok()) continue;
    int matching = 0;
    const int64_t capacity = FlavorCapacity(*flavor, nodes, &matching);
    const std::string subject = "resourceflavor/" + flavor->name;
    std::string wanted;
    for (const auto& [k, v] : flavor->node_labels)
      wanted += (wanted.empty() ? "" : ",") + k + "=" + v;
    for (const std::string& m : flavor->gpu_models)
      wanted += (wanted.empty() ? "" : ",") + ("gpu model " + m);
    if (matching == 0) {
      Finding f =
          MakeFinding(nominal.contains(flavor->name) ? Severity::kCritical : Severity::kWarning,
                      "flavor.no-node", subject, "no node has this flavor");
      f.evidence.push_back("the flavor selects " + (wanted.empty() ? "every node" : wanted) + "; " +
                           std::to_string(nodes.size()) + " node(s) registered");
      for (const auto& [queue, milli] : nominal[flavor->name]) {
        f.evidence.push_back("queue " + queue + " quotes " + std::to_string(milli / 1000) +
                             " GPU(s) of it");
      }
      f.meaning =
          "Work assigned this flavor has nowhere to run: it is admitted against quota and "
          "then waits, or is never admitted when this is the queue's only flavor.";
      f.fix =
          "Label the nodes meant for it (tessera label node NODE KEY=VALUE, or the agent's "
          "--labels), or correct the flavor's nodeLabels / gpuModels.";
      out->push_back(std::move(f));
      continue;
    }
    int64_t total = 0;
    std::vector<std::string> evidence;
    for (const auto& [queue, milli] : nominal[flavor->name]) {
      total += milli;
      evidence.push_back("queue " + queue + ": nominal " +
                         std::to_string(milli / 1000.0).substr(0, 6) + " GPU");
    }
    if (total <= capacity) continue;
    Finding f = MakeFinding(Severity::kWarning, "quota.above-capacity", subject,
                            "nominal GPU quota above what the flavor's nodes hold");
    f.evidence = std::move(evidence);
    f.evidence.push_back("sum of nominal quotas " + std::to_string(total / 1000) + " GPU; " +
                         std::to_string(matching) + " node(s) of the flavor hold " +
                         std::to_string(capacity / 1000) + " GPU");
    f.meaning =
        "Queues are promised more GPUs than exist: work admitted within quota waits for "
        "devices, and a queue's guaranteed share cannot always be given back by "
        "preemption.";
    f.fix =
        "Lower the queues' nominalQuota to the capacity (the cohort lends idle quota), or add "
        "nodes of this flavor.";
    out->push_back(std::move(f));
  }
}

// Devices the scheduler bound on a node that its agent does not report.
void CheckBindings(const DoctorInput& in, std::vector<Finding>* out) {
  std::map<std::string, std::map<int64_t, std::string>> reported;  // node -> index -> uuid
  for (const json& n : in.nodes) {
    auto& gpus = reported[NameOf(n)];
    for (const json& g : n.value("status", json::object()).value("gpus", json::array())) {
      gpus[g.value("index", -1)] = g.value("uuid", "");
    }
  }
  for (const json& job : in.jobs) {
    const json& status = job.value("status", json::object());
    for (const json& pod : status.value("pods", json::array())) {
      if (!pod.is_object() || !pod.contains("node")) continue;
      const std::string node = pod.value("node", "");
      const std::string subject = "job/" + NamespaceOf(job) + "/" + NameOf(job);
      auto n = reported.find(node);
      for (const json& d : pod.value("devices", json::array())) {
        const int64_t index = d.value("index", d.value("gpu", int64_t{-1}));
        const std::string uuid = d.value("uuid", "");
        std::string why;
        if (n == reported.end()) {
          why = "node " + node + " is not registered";
        } else if (!n->second.contains(index)) {
          why = "node " + node + " reports no GPU " + std::to_string(index);
        } else if (!uuid.empty() && n->second[index] != uuid) {
          why = "node " + node + " reports GPU " + std::to_string(index) + " as " +
                n->second[index] + ", the binding says " + uuid;
        }
        if (why.empty()) continue;
        Finding f = MakeFinding(Severity::kCritical, "node.view-differs", subject,
                                "pod " + pod.value("name", "") +
                                    " is bound to a GPU its node does not "
                                    "report");
        f.evidence.push_back(why);
        f.meaning =
            "The agent's view of its GPUs differs from the scheduler's: a card vanished "
            "or was replaced after the binding, so the task runs on the wrong card or "
            "not at all.";
        f.fix = "tessera describe node " + node +
                "; delete the Job's pod so it is placed again "
                "(tessera delete job), and see the node's findings for the missing GPU.";
        out->push_back(std::move(f));
        break;
      }
    }
  }
}

// The quarantine's circuit breaker refused an Xid lately (its event, core/quarantine.h).
void CheckBreaker(const DoctorInput& in, std::vector<Finding>* out) {
  constexpr int64_t kRecentMs = 60 * 60'000;
  const json* last = nullptr;
  std::string last_time;
  int refused = 0;
  for (const json& e : in.system_events) {
    const json& spec = e.value("spec", json::object());
    if (spec.value("reason", "") != "QuarantineCircuitBreakerOpen") continue;
    const std::string t = spec.value("time", "");
    const int64_t at = ParseTime(t);
    if (at < 0 || in.now_ms - at > kRecentMs) continue;
    ++refused;
    if (t >= last_time) {
      last_time = t;
      last = &e;
    }
  }
  if (last == nullptr) return;
  Finding f = MakeFinding(Severity::kCritical, "quarantine.breaker-open", "cluster",
                          "the quarantine's circuit breaker stopped automatic quarantine");
  f.evidence.push_back(std::to_string(refused) + " Xid(s) not acted on in the last hour; the " +
                       "last at " + last_time);
  f.evidence.push_back((*last)["spec"].value("message", ""));
  f.meaning =
      "Many GPUs were quarantined within the breaker's window: a shared cause (a driver "
      "rollout, power, cooling, a fabric fault) is likelier than many failing cards, so "
      "Tessera stopped taking GPUs out of service on its own.";
  f.fix =
      "Find the shared cause (tessera doctor's Xid findings by node, dmesg, the rollout "
      "history); quarantine the cards that need it by hand (tessera cordon NODE --gpu I). "
      "The breaker closes by itself once its window holds fewer quarantines.";
  out->push_back(std::move(f));
}

}  // namespace

std::vector<Finding> CheckScheduling(const DoctorInput& in) {
  std::vector<Finding> out;
  CheckBreaker(in, &out);
  CheckLocalQueues(in, &out);
  CheckFlavors(in, &out);
  CheckBindings(in, &out);
  return out;
}

}  // namespace tessera::api
