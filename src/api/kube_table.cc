#include "api/kube_table.h"

#include <algorithm>
#include <cstdio>

#include "api/json_read.h"
#include "api/kube_kinds.h"
#include "api/kube_node.h"
#include "api/object.h"
#include "api/time.h"

namespace tessera::api {

using nlohmann::json;

std::string HumanDuration(int64_t ms) {
  const int64_t seconds = ms / 1000;
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return std::to_string(seconds) + "s";
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    const int64_t s = seconds % 60;
    return std::to_string(minutes) + "m" + (s == 0 ? "" : std::to_string(s) + "s");
  }
  if (minutes < 60 * 3) return std::to_string(minutes) + "m";
  const int64_t hours = minutes / 60;
  if (hours < 8) {
    const int64_t m = minutes % 60;
    return std::to_string(hours) + "h" + (m == 0 ? "" : std::to_string(m) + "m");
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    const int64_t h = hours % 24;
    return std::to_string(hours / 24) + "d" + (h == 0 ? "" : std::to_string(h) + "h");
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const int64_t d = (hours / 24) % 365;
    return std::to_string(hours / 24 / 365) + "y" + (d == 0 ? "" : std::to_string(d) + "d");
  }
  return std::to_string(hours / 24 / 365) + "y";
}

bool WantsTable(std::string_view accept) {
  return accept.find("as=Table") != std::string_view::npos;
}

json TableColumn(const char* name, const char* type, const char* description, int priority,
                 const char* format) {
  return {{"name", name},
          {"type", type},
          {"format", format},
          {"description", description},
          {"priority", priority}};
}

json TableRow(json cells, const json& obj) {
  return {{"cells", std::move(cells)}, {"object", obj}};
}

void IncludeObjects(std::string_view include, json* table) {
  if (include == "Object") return;
  for (json& row : (*table)["rows"]) {
    if (include == "None") {
      row.erase("object");
      continue;
    }
    json& obj = row["object"];
    obj = {{"kind", "PartialObjectMetadata"},
           {"apiVersion", "meta.k8s.io/v1"},
           {"metadata", Member(obj, "metadata")}};
  }
}

json TableOf(json columns, json rows, const std::string& version) {
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", {{"resourceVersion", version}}},
          {"columnDefinitions", std::move(columns)},
          {"rows", std::move(rows)}};
}

std::string AgeOf(const json& obj, int64_t now_ms) {
  const int64_t created = ParseTime(Str(Member(obj, "metadata"), "creationTimestamp"));
  return created < 0 ? "<unknown>" : HumanDuration(now_ms - created);
}

json TesseraTable(std::string_view kind, const std::vector<json>& objects,
                  const std::string& version, int64_t now_ms) {
  const bool job = kind == "Job";
  json columns = json::array({TableColumn("Name", "string", "The object's name.", 0, "name")});
  if (job) {
    columns.push_back(TableColumn("Phase", "string", "Pending, Admitted, Succeeded, Failed.", 0));
    columns.push_back(TableColumn("Queue", "string", "The queue it was admitted by, or asks.", 0));
    columns.push_back(TableColumn("GPUs", "integer", "Whole GPUs asked for, all replicas.", 0));
    columns.push_back(TableColumn("Nodes", "string", "Where its pods run.", 0));
  }
  columns.push_back(TableColumn("Age", "string", "Time since the object was created.", 0));
  json rows = json::array();
  for (const json& o : objects) {
    json cells = json::array({Str(Member(o, "metadata"), "name")});
    if (job) {
      const json& spec = Member(o, "spec");
      const json& st = Member(o, "status");
      int64_t gpus = 0;
      for (const json& t : ListOf(Member(spec, "tasks"))) {
        const json& g = Member(Member(Member(t, "resources"), "limits"), "nvidia.com/gpu");
        const int64_t each = g.is_number_integer() ? g.get<int64_t>()
                             : g.is_string()       ? std::atoll(g.get<std::string>().c_str())
                                                   : 0;
        const json& r = Member(t, "replicas");
        gpus += each * (r.is_number_integer() ? r.get<int64_t>() : 1);
      }
      std::vector<std::string> nodes;
      for (const json& p : ListOf(Member(st, "pods"))) {
        const std::string n = Str(p, "node");
        if (!n.empty() && std::find(nodes.begin(), nodes.end(), n) == nodes.end()) {
          nodes.push_back(n);
        }
      }
      std::string where;
      for (const std::string& n : nodes) where += (where.empty() ? "" : ",") + n;
      const std::string queue = Str(st, "queue").empty() ? Str(spec, "queue") : Str(st, "queue");
      cells.push_back(Str(st, "phase").empty() ? "Pending" : Str(st, "phase"));
      cells.push_back(queue.empty() ? "<none>" : queue);
      cells.push_back(gpus);
      cells.push_back(where.empty() ? "<none>" : where);
    }
    cells.push_back(AgeOf(o, now_ms));
    rows.push_back(TableRow(std::move(cells), o));
  }
  return TableOf(std::move(columns), std::move(rows), version);
}

json NodeTable(const std::vector<json>& nodes, const std::string& version, int64_t now_ms) {
  json columns = json::array({
      TableColumn("Name", "string", "The node's name.", 0, "name"),
      TableColumn("Status", "string",
                  "Ready, NotReady or Unknown, and SchedulingDisabled when cordoned.", 0),
      TableColumn("Roles", "string", "The node's roles (node-role.kubernetes.io/ labels).", 0),
      TableColumn("Age", "string", "Time since the node registered.", 0),
      TableColumn("Version", "string", "The node agent.", 0),
      TableColumn("GPUs", "string", "Healthy GPUs / all GPUs.", 0),
      TableColumn("GPU-Model", "string", "The model of the node's first GPU.", 1),
      TableColumn("Internal-IP", "string", "The node's internal address.", 1),
      TableColumn("OS-Image", "string", "The node's OS image.", 1),
      TableColumn("Driver", "string", "The NVIDIA driver version.", 1),
  });
  json rows = json::array();
  for (const json& n : nodes) {
    const json& status = Member(n, "status");
    std::string state = "Unknown";
    for (const json& c : Member(status, "conditions")) {
      if (Str(c, "type") != "Ready") continue;
      const std::string s = Str(c, "status");
      state = s == "True" ? "Ready" : s == "False" ? "NotReady" : "Unknown";
    }
    if (Member(Member(n, "spec"), "unschedulable") == true) state += ",SchedulingDisabled";
    std::string roles;
    for (const auto& [k, v] : Member(Member(n, "metadata"), "labels").items()) {
      constexpr std::string_view kRole = "node-role.kubernetes.io/";
      if (k.starts_with(kRole) && k.size() > kRole.size()) {
        roles += (roles.empty() ? "" : ",") + k.substr(kRole.size());
      }
    }
    const json& cap = Member(status, "capacity");
    const json& alloc = Member(status, "allocatable");
    const std::string gpus = Str(alloc, "nvidia.com/gpu") + "/" + Str(cap, "nvidia.com/gpu");
    std::string model = Str(Member(Member(n, "metadata"), "labels"), "nvidia.com/gpu.product");
    const json& info = Member(status, "nodeInfo");
    const std::string driver =
        Str(Member(Member(n, "metadata"), "annotations"), "tessera.io/driver-version");
    rows.push_back(TableRow(
        {Str(Member(n, "metadata"), "name"), state, roles.empty() ? "<none>" : roles,
         AgeOf(n, now_ms), Str(info, "kubeletVersion"), gpus, model.empty() ? "<none>" : model,
         "<none>", Str(info, "osImage").empty() ? "<unknown>" : Str(info, "osImage"),
         driver.empty() ? "<none>" : driver},
        n));
  }
  return TableOf(std::move(columns), std::move(rows), version);
}

json KubeTable(const KubeKind& kind, const std::vector<json>& objects, const std::string& version,
               int64_t now_ms) {
  json columns = json::array({TableColumn("Name", "string", "The object's name.", 0, "name")});
  const bool pod = kind.kind == "Pod";
  const bool batch_job = kind.group == "batch" && kind.kind == "Job";
  const bool volcano_job = kind.group == "batch.volcano.sh";
  if (kind.kind == "Event") {
    json ecols = json::array({
        TableColumn("Last Seen", "string", "When the event last happened.", 0),
        TableColumn("Type", "string", "Normal or Warning.", 0),
        TableColumn("Reason", "string", "Why, in one word.", 0),
        TableColumn("Object", "string", "The object it is about.", 0),
        TableColumn("Message", "string", "What happened.", 0),
    });
    json erows = json::array();
    for (const json& e : objects) {
      const bool v1 = Member(e, "regarding").is_object();
      const int64_t at = ParseTime(Str(e, v1 ? "deprecatedLastTimestamp" : "lastTimestamp"));
      const json& obj = Member(e, v1 ? "regarding" : "involvedObject");
      std::string kind_name = Str(obj, "kind");
      std::transform(kind_name.begin(), kind_name.end(), kind_name.begin(), ::tolower);
      erows.push_back(TableRow(
          {at < 0 ? "<unknown>" : HumanDuration(now_ms - at), Str(e, "type"), Str(e, "reason"),
           kind_name + "/" + Str(obj, "name"), Str(e, v1 ? "note" : "message")},
          e));
    }
    return TableOf(std::move(ecols), std::move(erows), version);
  }
  if (pod) {
    columns.push_back(TableColumn("Ready", "string", "Ready containers / containers.", 0));
    columns.push_back(TableColumn("Status", "string", "The pod's phase.", 0));
    columns.push_back(TableColumn("Restarts", "integer", "Restarts of its containers.", 0));
  } else if (batch_job) {
    columns.push_back(TableColumn("Status", "string", "Running, Complete, Failed, Suspended.", 0));
    columns.push_back(TableColumn("Completions", "string", "Succeeded / wanted pods.", 0));
  } else if (volcano_job) {
    columns.push_back(TableColumn("Status", "string", "The job's phase.", 0));
    columns.push_back(TableColumn("MinAvailable", "integer", "The gang's minimum.", 0));
    columns.push_back(TableColumn("Running", "integer", "Running pods.", 0));
  }
  const bool ns_kind = kind.kind == "Namespace";
  if (ns_kind) columns.push_back(TableColumn("Status", "string", "The namespace's phase.", 0));
  columns.push_back(TableColumn("Age", "string", "Time since the object was created.", 0));
  if (pod) {
    columns.push_back(TableColumn("Node", "string", "The node the pod runs on.", 1));
    columns.push_back(TableColumn("GPUs", "string", "The nvidia.com/gpu limit of its pod.", 1));
  }
  json rows = json::array();
  for (const json& o : objects) {
    const json& st = Member(o, "status");
    json cells = json::array({Str(Member(o, "metadata"), "name")});
    if (pod) {
      int ready = 0, total = 0, restarts = 0;
      for (const json& c : ListOf(Member(st, "containerStatuses"))) {
        ++total;
        if (Member(c, "ready") == true) ++ready;
        restarts += static_cast<int>(Num(c, "restartCount"));
      }
      std::string phase = Str(st, "phase");
      if (phase == "Succeeded") phase = "Completed";
      if (phase == "Failed") phase = "Error";
      cells.push_back(std::to_string(ready) + "/" + std::to_string(total));
      cells.push_back(phase);
      cells.push_back(restarts);
    } else if (batch_job) {
      std::string state = "Running";
      for (const json& c : ListOf(Member(st, "conditions"))) {
        if (Str(c, "status") == "True") state = Str(c, "type");
      }
      const json& spec = Member(o, "spec");
      const json& want = Member(spec, "completions").is_number()   ? Member(spec, "completions")
                         : Member(spec, "parallelism").is_number() ? Member(spec, "parallelism")
                                                                   : json(1);
      cells.push_back(state);
      cells.push_back(std::to_string(static_cast<int>(Num(st, "succeeded"))) + "/" + want.dump());
    } else if (volcano_job) {
      cells.push_back(Str(Member(st, "state"), "phase"));
      cells.push_back(static_cast<int>(Num(st, "minAvailable")));
      cells.push_back(static_cast<int>(Num(st, "running")));
    }
    if (ns_kind) cells.push_back(Str(st, "phase"));
    cells.push_back(AgeOf(o, now_ms));
    if (pod) {
      const std::string node = Str(Member(o, "spec"), "nodeName");
      int64_t gpus = 0;
      for (const json& c : ListOf(Member(Member(o, "spec"), "containers"))) {
        const json& g = Member(Member(Member(c, "resources"), "limits"), "nvidia.com/gpu");
        if (g.is_number_integer()) gpus += g.get<int64_t>();
        if (g.is_string()) gpus += std::atoll(g.get<std::string>().c_str());
      }
      cells.push_back(node.empty() ? "<none>" : node);
      cells.push_back(std::to_string(gpus));
    }
    rows.push_back(TableRow(std::move(cells), o));
  }
  return TableOf(std::move(columns), std::move(rows), version);
}

}  // namespace tessera::api
