#include "cli/doctor_cmd.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "agent/checkup.h"
#include "agent/node_agent.h"
#include "agent/node_object.h"
#include "agent/nvml.h"
#include "api/doctor.h"
#include "api/time.h"
#include "cli/command_io.h"
#include "cli/store_cmd.h"

namespace tessera::cli {

using nlohmann::json;

namespace {

constexpr int kFoundCritical = 1;

std::string HostName() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("localhost");
}

// The path of `name` on PATH, "" when it is not there.
std::string OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// DCGM's level-1 diagnostics, when dcgmi is installed (seconds; killed after 2 minutes).
std::vector<api::Finding> DcgmFindings(const std::string& host) {
  const std::string dcgmi = OnPath("dcgmi");
  if (dcgmi.empty() || dcgmi.find('\'') != std::string::npos) return {};
  FILE* pipe = popen(("timeout 120 '" + dcgmi + "' diag -r 1 -j 2>&1").c_str(), "r");
  if (pipe == nullptr) return {};
  std::string output;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  const int status = pclose(pipe);
  return api::CheckDcgmDiag(host, output, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

// This machine through NVML, as its agent would report it: the node checks on that.
std::vector<api::Finding> LocalFindings(const ResourceOptions& o) {
  const std::string host = HostName();
  auto nvml = agent::Nvml::Load(o.doctor_flags.nvml_library);
  if (!nvml.ok()) return {api::NvmlStartFinding(host, nvml.status().message())};
  auto gpus = (*nvml)->Discover();
  if (!gpus.ok()) return {api::NvmlStartFinding(host, gpus.status().message())};
  agent::NodeIdentity id;
  id.name = host;
  json node = agent::NodeObject(id, *gpus, api::FormatTime(agent::NowMs()));
  if (auto s = (*nvml)->Sample(); s.ok()) {
    node["status"]["telemetry"] = agent::SampleJson(*s);
    // Which processes are Tessera's tasks only the node's agent knows: `tessera doctor
    // node/NAME` reports the others.
    for (json& t : node["status"]["telemetry"]) t.erase("processes");
  }
  if (auto c = (*nvml)->Checkup(); c.ok()) node["status"]["checkups"] = agent::CheckupJson(*c);
  // Xids come as events from now on: none to read of the past here (dmesg has them).
  std::vector<api::Finding> out = api::CheckNode(node, agent::NowMs());
  for (api::Finding& f : DcgmFindings(host)) out.push_back(std::move(f));
  return out;
}

// The control plane: this server's /metrics, and on etcd `tessera store status`'s report.
std::vector<api::Finding> ControlPlaneFindings(const ResourceOptions& o, std::ostream& err) {
  std::string metrics;
  std::ostringstream quiet;
  int code = 0;
  if (auto r = Send(o, "GET", "/metrics", "", "", quiet, &code); r && r->status == 200) {
    metrics = r->body;
  }
  std::optional<json> store;
  std::vector<api::Finding> out;
  if (!o.doctor_flags.store.empty()) {
    StoreStatusOptions so;
    so.store = o.doctor_flags.store;
    so.etcd_ca_file = o.doctor_flags.etcd_ca_file;
    so.etcd_cert_file = o.doctor_flags.etcd_cert_file;
    so.etcd_key_file = o.doctor_flags.etcd_key_file;
    auto s = StoreStatus(so);
    if (s.ok()) {
      store = std::move(s).value();
    } else {
      api::Finding f = api::MakeFinding(api::Severity::kCritical, "store.unreachable",
                                        "control-plane", "etcd cannot be read");
      f.evidence.push_back(s.status().message());
      f.meaning = "Without etcd the replicas take no write and elect no leader.";
      f.fix = "Check the etcd members and the --store URL and certificates.";
      out.push_back(std::move(f));
      err << "warning: --store: " << s.status().message() << "\n";
    }
  }
  for (api::Finding& f : api::CheckControlPlane(store ? &*store : nullptr, metrics)) {
    out.push_back(std::move(f));
  }
  return out;
}

// The objects the checks read, from the server.
bool Fetch(const ResourceOptions& o, api::DoctorInput* in, std::ostream& err, int* code) {
  const std::string base = "/apis/tessera.io/v1/";
  const std::pair<const char*, std::vector<json>*> lists[] = {{"nodes", &in->nodes},
                                                              {"jobs", &in->jobs},
                                                              {"queues", &in->queues},
                                                              {"localqueues", &in->local_queues},
                                                              {"resourceflavors", &in->flavors},
                                                              {"namespaces", &in->namespaces}};
  for (const auto& [plural, into] : lists) {
    auto items = List(o, base + plural, err, code);
    if (!items) return false;
    *into = std::move(*items);
  }
  auto events = List(o, base + "namespaces/tessera-system/events", err, code);
  if (!events) return false;
  in->system_events = std::move(*events);
  // The scheduler's own order of the waiting Jobs, when this server has one (a replica that does
  // not lead answers 503: the checks then count older Jobs ahead).
  std::ostringstream quiet;
  int ignored = 0;
  auto order = Send(o, "GET", base + "pendingworkloads?limit=100000000", "", "", quiet, &ignored);
  if (order && order->status == 200) {
    const json doc = json::parse(order->body, nullptr, false);
    for (const json& item : doc.is_object() ? doc.value("items", json::array()) : json::array()) {
      const json& m = item.value("metadata", json::object());
      in->places[m.value("namespace", "") + "/" + m.value("name", "")] = item;
    }
  }
  return true;
}

// Each pod's recent log of `job`, for the OOM check.
void FetchLogs(const ResourceOptions& o, const json& job, api::DoctorInput* in) {
  const std::string ns = job["metadata"].value("namespace", ""),
                    name = job["metadata"].value("name", "");
  for (const json& pod : job.value("status", json::object()).value("pods", json::array())) {
    if (!pod.is_object() || !pod.contains("name")) continue;
    const std::string p = pod.value("name", "");
    std::ostringstream quiet;
    int code = 0;
    auto r = Send(o, "GET",
                  "/apis/tessera.io/v1/namespaces/" + ns + "/jobs/" + name + "/logs?pod=" + p +
                      "&tailLines=2000",
                  "", "", quiet, &code);
    if (r && r->status == 200) in->logs[ns + "/" + name + "/" + p] = r->body;
  }
}

const json* Named(const std::vector<json>& list, const std::string& name, const std::string& ns) {
  for (const json& o : list) {
    const json& m = o.value("metadata", json::object());
    if (m.value("name", "") == name && (ns.empty() || m.value("namespace", "") == ns)) return &o;
  }
  return nullptr;
}

}  // namespace

CLI::App* AddDoctorCommand(CLI::App& app, ResourceOptions& o) {
  CLI::App* doctor = app.add_subcommand("doctor",
                                        "What is wrong with the cluster, a node, a GPU or a job, "
                                        "and how to fix it");
  doctor->add_option("target", o.doctor_flags.target,
                     "node/NAME, gpu/NODE/INDEX or job/NAME (default: the whole cluster)");
  doctor->add_option("-n,--namespace", o.ns, "The job's namespace")->capture_default_str();
  doctor->add_option("-o,--output", o.output, "text or json")->capture_default_str();
  doctor->add_flag("--local", o.doctor_flags.local,
                   "Check this machine's GPUs through NVML (no server needed)");
  doctor
      ->add_option("--nvml-library", o.doctor_flags.nvml_library, "With --local: the NVML library")
      ->capture_default_str();
  doctor->add_option("--store", o.doctor_flags.store,
                     "etcd://HOST:PORT[,...][/PREFIX]: check the replicas, the leader and etcd too "
                     "(as tessera store status)");
  doctor->add_option("--etcd-ca-file", o.doctor_flags.etcd_ca_file, "With --store: etcd's CA");
  doctor->add_option("--etcd-cert-file", o.doctor_flags.etcd_cert_file,
                     "With --store: a client certificate for etcd");
  doctor->add_option("--etcd-key-file", o.doctor_flags.etcd_key_file,
                     "With --store: the client certificate's key");
  doctor->footer(
      "Exit status: 0 nothing critical, 1 a critical finding, 2 usage, 3 server unreachable.\n"
      "Examples: tessera doctor; tessera doctor node/gpu-3; tessera doctor job/train -n team-a;\n"
      "          tessera doctor --local -o json");
  AddConnectionFlags(doctor, o);
  return doctor;
}

int DoctorCommand(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  if (o.output != "" && o.output != "json" && o.output != "text") {
    err << "error: -o: unknown output format \"" << o.output << "\" (text, json)\n";
    return kUsage;
  }
  const std::string& t = o.doctor_flags.target;
  const size_t slash = t.find('/');
  const std::string what = t.substr(0, slash);
  const std::string rest = slash == std::string::npos ? "" : t.substr(slash + 1);
  if (!t.empty() && (rest.empty() || (what != "node" && what != "gpu" && what != "job"))) {
    err << "error: doctor: \"" << t
        << "\": expected node/NAME, gpu/NODE/INDEX or job/NAME (or nothing: the whole cluster)\n";
    return kUsage;
  }
  std::vector<api::Finding> findings;
  if (o.doctor_flags.local) {
    if (!t.empty() && what != "gpu") {
      err << "error: doctor --local: checks this machine; name no " << what << "\n";
      return kUsage;
    }
    findings = LocalFindings(o);
  } else {
    api::DoctorInput in;
    in.now_ms = agent::NowMs();
    int code = 0;
    if (!Fetch(o, &in, err, &code)) return code;
    if (t.empty()) {
      for (const json& n : in.nodes) {
        for (api::Finding& f : api::CheckNode(n, in.now_ms)) findings.push_back(std::move(f));
      }
      for (api::Finding& f : api::CheckScheduling(in)) findings.push_back(std::move(f));
      for (api::Finding& f : ControlPlaneFindings(o, err)) findings.push_back(std::move(f));
      for (const json& j : in.jobs) {
        for (api::Finding& f : api::CheckJob(j, in)) {
          // The cluster view keeps what is wrong; a job's place in line is for `doctor job/X`.
          if (f.check != "job.pending") findings.push_back(std::move(f));
        }
      }
    } else if (what == "node" || what == "gpu") {
      const std::string node = rest.substr(0, rest.find('/'));
      const json* n = Named(in.nodes, node, "");
      if (n == nullptr) {
        err << "Error from server (NotFound): nodes \"" << node << "\" not found\n";
        return kRefused;
      }
      findings = api::CheckNode(*n, in.now_ms);
      for (api::Finding& f : api::CheckScheduling(in)) {
        // Bindings the node does not report (their evidence starts with the node).
        if (f.check == "node.view-differs" && !f.evidence.empty() &&
            f.evidence[0].starts_with("node " + node + " ")) {
          findings.push_back(std::move(f));
        }
      }
      if (what == "gpu") {
        const size_t cut = rest.find('/');
        if (cut == std::string::npos || cut + 1 == rest.size()) {
          err << "error: doctor: \"" << t << "\": expected gpu/NODE/INDEX\n";
          return kUsage;
        }
        const std::string gpu = "node/" + node + "/gpu/" + rest.substr(cut + 1);
        std::erase_if(findings, [&](const api::Finding& f) { return f.subject != gpu; });
      }
    } else {
      const json* j = Named(in.jobs, rest, o.ns);
      if (j == nullptr) {
        err << "Error from server (NotFound): jobs \"" << rest << "\" not found in namespace "
            << o.ns << "\n";
        return kRefused;
      }
      FetchLogs(o, *j, &in);
      findings = api::CheckJob(*j, in);
    }
  }
  if (o.doctor_flags.local && what == "gpu") {
    // --local gpu/INDEX: one card of this machine.
    std::erase_if(findings, [&](const api::Finding& f) {
      return !f.subject.ends_with("/gpu/" + rest) && f.subject.find("/gpu/") != std::string::npos;
    });
  }
  api::SortFindings(&findings);
  if (o.output == "json") {
    out << api::FindingsJson(findings).dump(2) << "\n";
  } else {
    out << api::FindingsText(findings);
  }
  for (const api::Finding& f : findings) {
    if (f.severity == api::Severity::kCritical) return kFoundCritical;
  }
  return 0;
}

}  // namespace tessera::cli
