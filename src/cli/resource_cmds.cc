#include "cli/resource_cmds.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "api/gpu_quarantine.h"
#include "api/job_array.h"
#include "api/kinds.h"
#include "api/kube_table.h"
#include "api/object.h"
#include "api/quantity.h"
#include "api/time.h"
#include "api/yaml.h"
#include "cli/client.h"
#include "cli/command_io.h"
#include "cli/doctor_cmd.h"
#include "cli/node_cmds.h"
#include "cli/report_cmds.h"

namespace tessera::cli {

using nlohmann::json;
namespace fs = std::filesystem;

void AddConnectionFlags(CLI::App* cmd, ResourceOptions& o) {
  cmd->add_option("--server", o.server, "Server HOST:PORT (else TESSERA_ADDR, ~/.tessera/config)");
  cmd->add_option("--token", o.token, "Bearer token (else TESSERA_TOKEN, ~/.tessera/config)");
  cmd->add_option("--ca-file", o.ca_file,
                  "PEM CA bundle for an https:// server (else TESSERA_CA, ~/.tessera/config)");
}

namespace {

// The object a command names: its kind, name and namespace, and where the server is.
void AddObjectArgs(CLI::App* cmd, ResourceOptions& o, bool name_required) {
  cmd->add_option("kind", o.kind, "Kind: jobs, queues, localqueues, ... (or its short name)")
      ->required();
  CLI::Option* name = cmd->add_option("name", o.name, "Object name");
  if (name_required) name->required();
  cmd->add_option("-n,--namespace", o.ns, "Namespace")->capture_default_str();
  AddConnectionFlags(cmd, o);
}

// A kind from what users type: "jobs", "job", "Job", or a short name.
const api::KindInfo* ResolveKind(std::string word) {
  std::transform(word.begin(), word.end(), word.begin(), ::tolower);
  static const std::map<std::string, std::string> kShort = {
      {"cq", "queues"},
      {"clusterqueue", "queues"},
      {"clusterqueues", "queues"},
      {"lq", "localqueues"},
      {"pc", "priorityclasses"},
      {"pg", "podgroups"},
      {"rf", "resourceflavors"},
      {"flavor", "resourceflavors"},
      {"flavors", "resourceflavors"},
      {"quota", "namespacequotas"},
      {"quotas", "namespacequotas"},
      {"no", "nodes"},
  };
  if (auto it = kShort.find(word); it != kShort.end()) word = it->second;
  for (const api::KindInfo& k : api::Kinds()) {
    std::string kind(k.kind);
    std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
    if (word == k.plural || word == kind) return &k;
  }
  return nullptr;
}

std::string KnownKinds();

// The kind a command names; null (after saying so on `err`) when there is none such.
const api::KindInfo* KindOrComplain(const std::string& word, std::ostream& err) {
  const api::KindInfo* kind = ResolveKind(word);
  if (kind == nullptr) {
    err << "error: the server doesn't have a resource type \"" << word
        << "\" (known: " << KnownKinds() << ")\n";
  }
  return kind;
}

// "/apis/tessera.io/v1/namespaces/<ns>/<plural>", or "/apis/tessera.io/v1/<plural>" for
// cluster-scoped kinds and when `ns` is empty (all namespaces).
std::string CollectionPath(const api::KindInfo& kind, const std::string& ns) {
  return "/apis/tessera.io/v1/" +
         (kind.namespaced && !ns.empty() ? "namespaces/" + ns + "/" : std::string()) +
         std::string(kind.plural);
}

std::string KnownKinds() {
  std::string s;
  for (const api::KindInfo& k : api::Kinds()) s += (s.empty() ? "" : ", ") + std::string(k.plural);
  return s;
}

void EmitYaml(YAML::Emitter& e, const json& v) {
  if (v.is_object()) {
    e << YAML::BeginMap;
    for (const auto& [k, x] : v.items()) {
      e << YAML::Key << k << YAML::Value;
      EmitYaml(e, x);
    }
    e << YAML::EndMap;
  } else if (v.is_array()) {
    e << YAML::BeginSeq;
    for (const json& x : v) EmitYaml(e, x);
    e << YAML::EndSeq;
  } else if (v.is_string()) {
    // Quoted when YAML would read it as another type.
    const std::string s = v.get<std::string>();
    const auto parsed = api::ParseYamlDocuments(s);
    const bool plain_ok = parsed.ok() && parsed->size() == 1 && (*parsed)[0].is_string() &&
                          (*parsed)[0].get<std::string>() == s;
    if (plain_ok) {
      e << s;
    } else {
      e << YAML::DoubleQuoted << s;
    }
  } else if (v.is_null()) {
    e << YAML::Null;
  } else {
    e << v.dump();
  }
}

// A Job's succeeded tasks of those it must complete, as kubectl shows a batch/v1 Job's: an
// array counts its tasks as they end; another Job, its pods.
std::string Completions(const json& job) {
  const json spec = job.value("spec", json::object());
  const json status = job.value("status", json::object());
  if (api::IsArrayJob(job)) {
    return std::to_string(status.value("succeeded", 0)) + "/" +
           std::to_string(spec["completions"].get<int64_t>());
  }
  int64_t pods = 0, succeeded = 0;
  for (const json& t : spec.value("tasks", json::array())) pods += t.value("replicas", 1);
  for (const json& p : status.value("pods", json::array())) {
    if (p.is_object() && p.value("state", json::object()).value("phase", "") == "Succeeded") {
      ++succeeded;
    }
  }
  return std::to_string(succeeded) + "/" + std::to_string(pods);
}

// Per-kind summary columns for the table.
std::vector<std::pair<std::string, std::string>> Columns(const json& obj, bool wide) {
  const std::string kind = obj.value("kind", "");
  const json spec = obj.value("spec", json::object());
  std::vector<std::pair<std::string, std::string>> cols;
  if (kind == "Job") {
    int64_t pods = 0;
    for (const json& t : spec.value("tasks", json::array())) pods += t.value("replicas", 1);
    cols.emplace_back("QUEUE", spec.value("queue", "<none>"));
    cols.emplace_back("PODS", std::to_string(pods));
    cols.emplace_back("MIN", std::to_string(spec.value("minMember", 0)));
    const json status = obj.value("status", json::object());
    cols.emplace_back("STATUS", status.value("phase", "New"));
    cols.emplace_back("COMPLETIONS", Completions(obj));
    const json idle = status.value("idle", json::object());
    cols.emplace_back("IDLE-SINCE", idle.value("since", "-"));
    if (wide) cols.emplace_back("MESSAGE", status.value("message", ""));
  } else if (kind == "Queue") {
    cols.emplace_back("COHORT", spec.value("cohort", "<none>"));
    cols.emplace_back("STRATEGY", spec.value("queueingStrategy", "BestEffortFIFO"));
    const json status = obj.value("status", json::object());
    cols.emplace_back("ACTIVE", status.contains("active")
                                    ? (status["active"].get<bool>() ? "true" : "false")
                                    : "unknown");
  } else if (kind == "LocalQueue") {
    cols.emplace_back("CLUSTERQUEUE", spec.value("clusterQueue", spec.value("queue", "")));
  } else if (kind == "PriorityClass") {
    cols.emplace_back("VALUE", std::to_string(spec.value("value", 0)));
    cols.emplace_back("PREEMPTION", spec.value("preemptionPolicy", "PreemptLowerPriority"));
  } else if (kind == "Event") {
    const json inv = spec.value("involvedObject", json::object());
    cols.emplace_back("TYPE", spec.value("type", "Normal"));
    cols.emplace_back("REASON", spec.value("reason", ""));
    cols.emplace_back("OBJECT", inv.value("kind", "") + "/" + inv.value("name", ""));
    cols.emplace_back("MESSAGE", spec.value("message", ""));
  } else if (kind == "PodGroup") {
    cols.emplace_back("MINMEMBER", std::to_string(spec.value("minMember", 1)));
    cols.emplace_back("QUEUE", spec.value("queue", "<none>"));
  }
  if (wide) {
    cols.emplace_back("RESOURCEVERSION", obj["metadata"].value("resourceVersion", std::string("")));
  }
  return cols;
}

void PrintTable(const std::vector<json>& items, bool with_ns, bool wide, std::ostream& out) {
  if (items.empty()) {
    out << "No resources found.\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header;
  if (with_ns) header.push_back("NAMESPACE");
  header.push_back("NAME");
  for (const auto& [h, v] : Columns(items[0], wide)) header.push_back(h);
  rows.push_back(header);
  for (const json& o : items) {
    std::vector<std::string> row;
    if (with_ns) row.push_back(o["metadata"].value("namespace", ""));
    row.push_back(o["metadata"].value("name", ""));
    for (const auto& [h, v] : Columns(o, wide)) row.push_back(v);
    rows.push_back(row);
  }
  PrintRows(rows, out);
}

// A Kubernetes Table (meta.k8s.io/v1) as kubectl prints it: the columns of priority 0, and the
// others too when `wide`, names upper-cased.
void PrintKubeTable(const json& table, bool wide, std::ostream& out) {
  const json& rows = table["rows"];
  if (rows.empty()) {
    out << "No resources found.\n";
    return;
  }
  std::vector<size_t> shown;
  std::vector<std::vector<std::string>> lines(1);
  const json& columns = table["columnDefinitions"];
  for (size_t c = 0; c < columns.size(); ++c) {
    if (!wide && columns[c].value("priority", 0) > 0) continue;
    shown.push_back(c);
    std::string name = columns[c].value("name", "");
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    lines[0].push_back(std::move(name));
  }
  for (const json& row : rows) {
    std::vector<std::string>& line = lines.emplace_back();
    for (size_t c : shown) {
      const json& cell = row["cells"][c];
      line.push_back(cell.is_string() ? cell.get<std::string>() : cell.dump());
    }
  }
  PrintRows(lines, out);
}

// `tessera get nodes` in a table: the columns `kubectl get nodes` shows (STATUS from the Ready
// condition the server derives from the agents' heartbeats, ROLES, AGE, VERSION, GPUS), read
// from the Kubernetes view of the nodes (`query`: a name or a label selector, as for other
// kinds).
int PrintNodes(const ResourceOptions& o, const std::string& query, std::ostream& out,
               std::ostream& err) {
  int code = 0;
  auto r = Send(o, "GET", "/api/v1/nodes" + query, "", "", err, &code);
  if (!r) return code;
  if (r->status != 200) return Refused(*r, err);
  const json body = json::parse(r->body, nullptr, false);
  std::vector<json> nodes;
  if (o.name.empty()) {
    for (const json& n : body.value("items", json::array())) nodes.push_back(n);
  } else {
    nodes.push_back(body);
  }
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  PrintKubeTable(api::NodeTable(nodes, "", now_ms), o.output == "wide", out);
  return 0;
}

int Apply(const ResourceOptions& o, std::istream& in, std::ostream& out, std::ostream& err) {
  std::vector<std::pair<std::string, std::string>> sources;  // name, text
  for (const std::string& f : o.files) {
    if (f == "-") {
      std::stringstream ss;
      ss << in.rdbuf();
      sources.emplace_back("<stdin>", ss.str());
      continue;
    }
    std::error_code ec;
    std::vector<fs::path> paths;
    if (fs::is_directory(f, ec)) {
      for (const auto& e : fs::directory_iterator(f, ec)) {
        const std::string ext = e.path().extension();
        if (ext == ".yaml" || ext == ".yml" || ext == ".json") paths.push_back(e.path());
      }
      std::sort(paths.begin(), paths.end());
    } else {
      paths.push_back(f);
    }
    for (const fs::path& p : paths) {
      std::ifstream file(p);
      if (!file) {
        err << "error: cannot read " << p.string() << "\n";
        return kUsage;
      }
      std::stringstream ss;
      ss << file.rdbuf();
      sources.emplace_back(p.string(), ss.str());
    }
  }
  int code = 0;
  for (const auto& [name, text] : sources) {
    int send_code = 0;
    auto r = Send(o, "POST", "/apis/tessera.io/v1/apply?namespace=" + o.ns, text,
                  "application/yaml", err, &send_code);
    if (!r) return send_code;
    if (r->status != 200) {
      err << name << ": ";
      code = Refused(*r, err);
      continue;
    }
    const json body = json::parse(r->body, nullptr, false);
    // What the server accepted but does not act on, as kubectl prints the API's warnings.
    const json warnings = body.value("warnings", json::array());
    for (const json& w : warnings) {
      if (w.is_string()) err << "Warning: " << w.get<std::string>() << "\n";
    }
    const json items = body.value("items", json::array());
    for (const json& item : items) {
      const api::KindInfo* k = api::FindKind(item.value("kind", ""));
      std::string kind = k ? std::string(k->plural) : item.value("kind", "");
      out << kind << "/" << item["metadata"].value("name", "");
      if (item["metadata"].contains("namespace")) {
        out << " (namespace " << item["metadata"]["namespace"].get<std::string>() << ")";
      }
      out << " applied, resourceVersion "
          << item["metadata"].value("resourceVersion", std::string("?")) << "\n";
    }
  }
  return code;
}

int Get(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  const api::KindInfo* kind = KindOrComplain(o.kind, err);
  if (kind == nullptr) return kUsage;
  if (o.output != "" && o.output != "wide" && o.output != "json" && o.output != "yaml") {
    err << "error: -o: unknown output format \"" << o.output << "\" (wide, json, yaml)\n";
    return kUsage;
  }
  if (o.idle && kind->kind != "Job") {
    err << "error: --idle: only jobs hold GPUs idle\n";
    return kUsage;
  }
  const bool all = o.all_namespaces || !kind->namespaced;
  std::string query;  // after the collection's path: a name or a label selector
  if (!o.name.empty()) query += "/" + o.name;
  if (!o.selector.empty() && o.name.empty()) {
    std::string enc;
    for (char c : o.selector) {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
          c == '/') {
        enc += c;
      } else {
        std::ostringstream h;
        h << '%' << std::uppercase << std::hex << std::setw(2) << std::setfill('0')
          << static_cast<int>(static_cast<unsigned char>(c));
        enc += h.str();
      }
    }
    query += "?labelSelector=" + enc;
  }
  if (kind->kind == "Node" && (o.output.empty() || o.output == "wide")) {
    return PrintNodes(o, query, out, err);
  }
  const std::string target = CollectionPath(*kind, o.all_namespaces ? "" : o.ns) + query;
  int code = 0;
  auto r = Send(o, "GET", target, "", "", err, &code);
  if (!r) return code;
  if (r->status != 200) return Refused(*r, err);
  json body = json::parse(r->body, nullptr, false);
  if (o.idle) {
    auto is_idle = [](const json& j) {
      return j.is_object() && j.value("status", json::object()).contains("idle");
    };
    if (!o.name.empty() && !is_idle(body)) {
      err << "error: job " << o.name << " holds no idle GPUs\n";
      return kRefused;
    }
    if (o.name.empty() && body.contains("items") && body["items"].is_array()) {
      json kept = json::array();
      for (json& i : body["items"]) {
        if (is_idle(i)) kept.push_back(std::move(i));
      }
      body["items"] = std::move(kept);
    }
  }
  if (o.output == "json") {
    out << body.dump(2) << "\n";
    return 0;
  }
  if (o.output == "yaml") {
    YAML::Emitter e;
    EmitYaml(e, body);
    out << e.c_str() << "\n";
    return 0;
  }
  std::vector<json> items;
  if (o.name.empty()) {
    for (const json& i : body.value("items", json::array())) items.push_back(i);
  } else {
    items.push_back(body);
  }
  PrintTable(items, all && kind->namespaced, o.output == "wide", out);
  return 0;
}

int Delete(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  const api::KindInfo* kind = KindOrComplain(o.kind, err);
  if (kind == nullptr) return kUsage;
  const std::string target = CollectionPath(*kind, o.ns) + "/" + o.name;
  int code = 0;
  auto r = Send(o, "DELETE", target, "", "", err, &code);
  if (!r) return code;
  if (r->status != 200) return Refused(*r, err);
  out << kind->plural << "/" << o.name << " deleted\n";
  return 0;
}

int TokenCreate(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  const int kinds = int{o.token_agent} + int{o.token_metrics} + int{!o.token_namespace.empty()};
  if (kinds != 1 || (!o.token_node.empty() && !o.token_agent)) {
    err << "error: give one of --namespace NS, --agent [--node NODE] or --metrics\n";
    return kUsage;
  }
  json body = json{{"namespace", o.token_namespace}};
  if (o.token_agent) {
    body = {{"role", "agent"}};
    if (!o.token_node.empty()) body["node"] = o.token_node;
  } else if (o.token_metrics) {
    body = {{"role", "metrics"}};
  }
  int code = 0;
  auto r =
      Send(o, "POST", "/apis/tessera.io/v1/tokens", body.dump(), "application/json", err, &code);
  if (!r) return code;
  if (r->status != 201) return Refused(*r, err);
  out << json::parse(r->body).value("token", "") << "\n";
  return 0;
}

int TokenList(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  int code = 0;
  auto items = List(o, "/apis/tessera.io/v1/tokens", err, &code);
  if (!items) return code;
  std::vector<std::vector<std::string>> rows = {{"ID", "ROLE", "NAMESPACE", "NODE", "CREATED"}};
  for (const json& i : *items) {
    auto text = [&](const char* k) { return i.value(k, std::string("-")); };
    rows.push_back({text("id"), text("role"), text("namespace"), text("node"), text("created")});
  }
  PrintRows(rows, out);
  return 0;
}

int TokenRevoke(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  int code = 0;
  auto r = Send(o, "DELETE", "/apis/tessera.io/v1/tokens/" + o.token_id, "", "", err, &code);
  if (!r) return code;
  if (r->status != 200) return Refused(*r, err);
  out << "token " << o.token_id << " revoked\n";
  return 0;
}

// The object as YAML, then the events about it.
int Describe(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  const api::KindInfo* kind = KindOrComplain(o.kind, err);
  if (kind == nullptr) return kUsage;
  int code = 0;
  auto r = Send(o, "GET", CollectionPath(*kind, o.ns) + "/" + o.name, "", "", err, &code);
  if (!r) return code;
  if (r->status != 200) return Refused(*r, err);
  const json obj = json::parse(r->body);
  YAML::Emitter e;
  EmitYaml(e, obj);
  out << e.c_str() << "\n";
  if (kind->kind == "Job" && api::IsArrayJob(obj)) {
    // An array's progress, as kubectl describe job says it.
    const json status = obj.value("status", json::object());
    int active = 0;
    for (const json& p : status.value("pods", json::array())) active += p.is_object() ? 1 : 0;
    out << "Completions: " << Completions(obj) << "\n"
        << "Pods Statuses: " << active << " Active / " << status.value("succeeded", 0)
        << " Succeeded / " << status.value("failed", 0) << " Failed\n";
    if (status.contains("completedIndexes")) {
      out << "Completed Indexes: "
          << (status["completedIndexes"] == "" ? "<none>" : status.value("completedIndexes", ""))
          << "\n";
    }
    if (status.contains("failedIndexes")) {
      out << "Failed Indexes: "
          << (status["failedIndexes"] == "" ? "<none>" : status.value("failedIndexes", "")) << "\n";
    }
  }
  if (!kind->namespaced) return 0;
  auto events = List(o, "/apis/tessera.io/v1/namespaces/" + o.ns + "/events", err, &code);
  if (!events) return code;
  std::vector<json> mine;
  for (const json& ev : *events) {
    const json inv = ev["spec"].value("involvedObject", json::object());
    if (inv.value("kind", "") == kind->kind && inv.value("name", "") == o.name) mine.push_back(ev);
  }
  std::sort(mine.begin(), mine.end(), [](const json& a, const json& b) {
    return a["spec"].value("time", "") < b["spec"].value("time", "");
  });
  out << "Events:\n";
  if (mine.empty()) out << "  <none>\n";
  for (const json& ev : mine) {
    out << "  " << ev["spec"].value("time", "") << "  " << ev["spec"].value("type", "") << "  "
        << ev["spec"].value("reason", "") << "  " << ev["spec"].value("message", "") << "\n";
  }
  return 0;
}

// A job's output, as the node agents shipped it (every run of each pod's container, or the
// previous one); with --follow, as it arrives.
int Logs(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  std::string target = "/apis/tessera.io/v1/namespaces/" + o.ns + "/jobs/" + o.name + "/logs?";
  if (!o.pod.empty()) target += "pod=" + o.pod + "&";
  if (o.tail >= 0) target += "tailLines=" + std::to_string(o.tail) + "&";
  if (o.previous) target += "previous=true&";
  if (!o.follow || o.previous) {
    int code = 0;
    auto r = Send(o, "GET", target, "", "", err, &code);
    if (!r) return code;
    if (r->status != 200) return Refused(*r, err);
    out << r->body;
    return 0;
  }
  return Stream(
      o, target + "follow=1",
      [&](std::string_view data) {
        out << data;
        out.flush();
      },
      err);
}

// A command run inside a running pod of a job, its output streamed; exits as the command did
// (128 + N when killed by signal N), as `kubectl exec` does.
int Exec(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  json body = {{"command", o.command}};
  if (!o.pod.empty()) body["pod"] = o.pod;
  int code = 0;
  // With --wait, a pod that is not running yet (412) is asked again until it is.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(o.exec_wait);
  std::optional<Response> r;
  for (;;) {
    r = Send(o, "POST", "/apis/tessera.io/v1/namespaces/" + o.ns + "/jobs/" + o.name + "/exec",
             body.dump(), "application/json", err, &code);
    if (!r) return code;
    if (r->status != 412 || std::chrono::steady_clock::now() >= give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (r->status != 201) return Refused(*r, err);
  const json session = json::parse(r->body);
  std::string pending;
  std::optional<int> exit_code;
  const int streamed = Stream(
      o, "/apis/tessera.io/v1/execs/" + session.value("id", ""),
      [&](std::string_view data) {
        pending.append(data);
        size_t start = 0;
        for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
          const json frame = json::parse(pending.substr(start, nl - start), nullptr, false);
          if (!frame.is_object()) continue;
          if (frame.contains("stdout")) {
            out << frame["stdout"].get<std::string>() << std::flush;
          } else if (frame.contains("stderr")) {
            err << frame["stderr"].get<std::string>() << std::flush;
          } else if (frame.contains("exitCode")) {
            exit_code = frame["exitCode"].get<int>();
          } else if (frame.contains("signal")) {
            exit_code = 128 + frame["signal"].get<int>();
          } else if (frame.contains("error")) {
            err << "error: " << frame["error"].get<std::string>() << "\n";
            exit_code = kRefused;
          }
        }
        pending.erase(0, start);
      },
      err);
  if (streamed != 0) return streamed;
  if (!exit_code) {
    err << "error: the session ended before the command did (the server stopped?)\n";
    return kUnreachable;
  }
  return *exit_code;
}

// Events of a namespace (or all), oldest first.
int Events(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  int code = 0;
  auto events = List(o,
                     o.all_namespaces ? "/apis/tessera.io/v1/events"
                                      : "/apis/tessera.io/v1/namespaces/" + o.ns + "/events",
                     err, &code);
  if (!events) return code;
  std::sort(events->begin(), events->end(), [](const json& a, const json& b) {
    return a["spec"].value("time", "") < b["spec"].value("time", "");
  });
  if (events->empty()) {
    out << "No events found.\n";
    return 0;
  }
  for (const json& e : *events) {
    const json spec = e.value("spec", json::object());
    const json inv = spec.value("involvedObject", json::object());
    out << spec.value("time", "") << "  "
        << (o.all_namespaces ? e["metadata"].value("namespace", "") + "  " : "")
        << spec.value("type", "") << "  " << spec.value("reason", "") << "  "
        << inv.value("kind", "") << "/" << inv.value("name", "") << "  "
        << spec.value("message", "") << "\n";
  }
  return 0;
}

}  // namespace

void AddResourceCommands(CLI::App& app, ResourceOptions& o) {
  o.apply = app.add_subcommand("apply", "Create or update objects from manifests (server-side)");
  o.apply->add_option("-f,--filename", o.files, "File, directory of .yaml/.yml/.json, or -")
      ->required();
  o.apply->add_option("-n,--namespace", o.ns, "Namespace for objects that name none")
      ->capture_default_str();
  AddConnectionFlags(o.apply, o);

  o.get = app.add_subcommand("get", "List objects of a kind, or show one");
  AddObjectArgs(o.get, o, /*name_required=*/false);
  o.get->add_flag("-A,--all-namespaces", o.all_namespaces, "Every namespace");
  o.get->add_option("-o,--output", o.output, "wide, json or yaml");
  o.get->add_option("-l,--selector", o.selector, "Label selector, e.g. team=a,tier!=spot");
  o.get->add_flag("--idle", o.idle,
                  "Jobs only: those holding GPUs idle (below the threshold for the window)");

  o.del = app.add_subcommand("delete", "Delete an object");
  AddObjectArgs(o.del, o, /*name_required=*/true);

  CLI::App* token = app.add_subcommand("token", "Manage API tokens");
  token->require_subcommand(1);
  o.token_create = token->add_subcommand("create", "Create a token (admin only)");
  o.token_create->add_option("--namespace", o.token_namespace, "A token for this namespace");
  o.token_create->add_flag("--agent", o.token_agent,
                           "A join token for node agents (with --node: that node's own token)");
  o.token_create->add_option("--node", o.token_node, "With --agent: the node the token acts for");
  o.token_create->add_flag("--metrics", o.token_metrics, "A token that only reads /metrics");
  o.token_list = token->add_subcommand("list", "List tokens, without their secrets (admin only)");
  o.token_revoke = token->add_subcommand("revoke", "Revoke a token at once (admin only)");
  o.token_revoke->add_option("id", o.token_id, "The token's ID (before the dot)")->required();
  AddConnectionFlags(o.token_list, o);
  AddConnectionFlags(o.token_revoke, o);

  o.describe = app.add_subcommand("describe", "Show an object and the events about it");
  AddObjectArgs(o.describe, o, /*name_required=*/true);

  auto node_command = [&](const char* name, const char* help) {
    CLI::App* cmd = app.add_subcommand(name, help);
    cmd->add_option("node", o.name, "Node name")->required();
    AddConnectionFlags(cmd, o);
    return cmd;
  };
  o.cordon = node_command("cordon", "Mark a node (or one of its GPUs) unschedulable");
  o.uncordon = node_command("uncordon", "Mark a node (or one of its GPUs) schedulable again");
  for (CLI::App* cmd : {o.cordon, o.uncordon}) {
    cmd->add_option("--gpu", o.gpu, "One GPU of the node, by index or UUID, instead of the node");
  }
  o.drain = node_command("drain",
                         "Cordon a node and evict its pods: running jobs go back to their queues");

  o.top = app.add_subcommand("top", "What is allocated: per node, per GPU or per queue");
  o.top->add_option("what", o.top_what, "nodes, gpus or queues")->required();
  AddConnectionFlags(o.top, o);

  o.logs = app.add_subcommand("logs", "A job's output (all its pods, or one)");
  o.logs->add_option("job", o.name, "Job name")->required();
  o.logs->add_option("-n,--namespace", o.ns, "Namespace")->capture_default_str();
  o.logs->add_option("-p,--pod", o.pod, "One pod of the job, e.g. worker-0");
  o.logs->add_option("--tail", o.tail, "Only the last N lines");
  o.logs->add_flag("-f,--follow", o.follow, "Keep streaming new output");
  o.logs->add_flag("--previous", o.previous,
                   "The run of each pod's container before its current one (it restarted)");
  AddConnectionFlags(o.logs, o);

  o.exec = app.add_subcommand("exec", "Run a command inside a running pod of a job");
  o.exec->add_option("job", o.name, "Job name")->required();
  o.exec->add_option("command", o.command, "The command and its arguments, after --")->required();
  o.exec->add_option("-n,--namespace", o.ns, "Namespace")->capture_default_str();
  o.exec->add_option("-p,--pod", o.pod, "The pod (default: the job's first running pod)");
  o.exec->add_option("--wait", o.exec_wait, "Seconds to wait for the pod to be running")
      ->check(CLI::Range(0, 3600));
  o.exec->footer("Example: tessera exec train -p worker-1 -- nvidia-smi");
  AddConnectionFlags(o.exec, o);

  o.usage = app.add_subcommand("usage", "GPU-hours, idle GPU-hours and cost from the ledger");
  o.usage->add_option("--by", o.usage_by, "namespace, queue or job")->capture_default_str();
  o.usage->add_option("--since", o.since, "A duration before now (24h, 7d) or an RFC 3339 time")
      ->capture_default_str();
  o.usage->add_option("--until", o.until, "Like --since (default: now)");
  o.usage->add_option("-o,--output", o.output, "csv or json (default: a table)");
  AddConnectionFlags(o.usage, o);

  o.doctor = AddDoctorCommand(app, o);

  o.events = app.add_subcommand("events", "What the scheduler did and why, oldest first");
  o.events->add_option("-n,--namespace", o.ns, "Namespace")->capture_default_str();
  o.events->add_flag("-A,--all-namespaces", o.all_namespaces, "Every namespace");
  AddConnectionFlags(o.events, o);
  AddConnectionFlags(o.token_create, o);
}

int RunResourceCommand(const ResourceOptions& o, std::istream& in, std::ostream& out,
                       std::ostream& err) {
  try {
    if (o.apply && o.apply->parsed()) return Apply(o, in, out, err);
    if (o.get && o.get->parsed()) return Get(o, out, err);
    if (o.del && o.del->parsed()) return Delete(o, out, err);
    if (o.token_create && o.token_create->parsed()) return TokenCreate(o, out, err);
    if (o.token_list && o.token_list->parsed()) return TokenList(o, out, err);
    if (o.token_revoke && o.token_revoke->parsed()) return TokenRevoke(o, out, err);
    if (o.describe && o.describe->parsed()) return Describe(o, out, err);
    if (o.cordon && o.cordon->parsed()) return Cordon(o, true, out, err);
    if (o.uncordon && o.uncordon->parsed()) return Cordon(o, false, out, err);
    if (o.drain && o.drain->parsed()) return Drain(o, out, err);
    if (o.top && o.top->parsed()) return TopCommand(o, out, err);
    if (o.events && o.events->parsed()) return Events(o, out, err);
    if (o.logs && o.logs->parsed()) return Logs(o, out, err);
    if (o.exec && o.exec->parsed()) return Exec(o, out, err);
    if (o.usage && o.usage->parsed()) return UsageCommand(o, out, err);
    if (o.doctor && o.doctor->parsed()) return DoctorCommand(o, out, err);
  } catch (const json::exception& e) {
    // Only a server that is not Tessera's, or a broken one, answers what cannot be read.
    err << "error: unexpected response from the server: " << e.what() << "\n";
    return kRefused;
  }
  return -1;
}

}  // namespace tessera::cli
