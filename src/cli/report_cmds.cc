// `tessera usage` and `tessera top`: what the ledger says each namespace, queue or job held and
// wasted, and what the nodes' GPUs and the running pods use now.
#include "cli/report_cmds.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/gpu_quarantine.h"
#include "api/kinds.h"
#include "api/quantity.h"
#include "api/time.h"
#include "cli/command_io.h"

namespace tessera::cli {

using nlohmann::json;

namespace {

// `v` with `digits` decimals.
std::string Fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Gpus(int64_t milli) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(milli % 1000 == 0 ? 0 : 2) << milli / 1000.0;
  return s.str();
}

// A GPU's HEALTH in `top gpus`: what its agent reports, then the admin's per-GPU cordon and the
// scheduling loop's quarantine for an Xid (api/gpu_quarantine.h).
std::string GpuHealthText(const json& gpu, const std::string& uuid, int64_t index,
                          const std::vector<std::string>& cordoned,
                          const Result<core::NodeQuarantine>& quarantine) {
  std::string health = gpu.value("health", "Healthy");
  if (std::any_of(cordoned.begin(), cordoned.end(),
                  [&](const std::string& c) { return api::NamesGpu(c, uuid, index); })) {
    health += ",Cordoned";
  }
  if (quarantine.ok() &&
      std::any_of(quarantine->gpus.begin(), quarantine->gpus.end(),
                  [&](const core::QuarantinedGpu& q) { return q.gpu == index; })) {
    health += ",Quarantined";
  }
  return health;
}

}  // namespace

int UsageCommand(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  if (o.usage_by != "namespace" && o.usage_by != "queue" && o.usage_by != "job") {
    err << "error: --by: must be namespace, queue or job, got \"" << o.usage_by << "\"\n";
    return kUsage;
  }
  if (o.output != "" && o.output != "json" && o.output != "csv") {
    err << "error: -o: unknown output format \"" << o.output << "\" (csv, json)\n";
    return kUsage;
  }
  for (const auto& [flag, value] : {std::pair{"--since", &o.since}, {"--until", &o.until}}) {
    if (value->empty() || api::ParseTime(*value) >= 0) continue;
    if (auto d = api::ParseDurationMs(*value, flag); !d.ok()) {
      err << "error: " << d.status().message() << " (or an RFC 3339 time)\n";
      return kUsage;
    }
  }
  std::string target = "/apis/tessera.io/v1/usage?by=" + o.usage_by + "&since=" + o.since;
  if (!o.until.empty()) target += "&until=" + o.until;
  int code = 0;
  auto r = Send(o, "GET", target, "", "", err, &code);
  if (!r) return code;
  if (r->status != 200) return Refused(*r, err);
  const json body = json::parse(r->body, nullptr, false);
  if (o.output == "json") {
    out << body.dump(2) << "\n";
    return 0;
  }
  const std::string currency = body.value("currency", "");
  std::vector<std::vector<std::string>> rows;
  if (o.usage_by == "job") {
    rows.push_back({"NAMESPACE", "JOB"});
  } else {
    std::string h = o.usage_by;
    std::transform(h.begin(), h.end(), h.begin(), ::toupper);
    rows.push_back({h});
  }
  for (const char* h : {"GPU-HOURS", "IDLE-GPU-HOURS", "COST", "WASTED-COST"}) {
    rows[0].push_back(h);
  }
  if (o.output != "csv") {  // the table names the currency
    rows[0][rows[0].size() - 2] += "(" + currency + ")";
    rows[0].back() += "(" + currency + ")";
  }
  const bool csv = o.output == "csv";
  double total[4] = {0, 0, 0, 0};
  bool unpriced = false;
  for (const json& i : body.value("items", json::array())) {
    std::vector<std::string> row;
    if (o.usage_by == "job") {
      row = {i.value("namespace", ""), i.value("job", "")};
    } else {
      row = {i.value(o.usage_by, "")};
    }
    const double v[4] = {i.value("gpuHours", 0.0), i.value("idleGpuHours", 0.0),
                         i.value("cost", 0.0), i.value("wastedCost", 0.0)};
    const bool priced = i.value("priced", true);
    unpriced |= !priced;
    for (int k = 0; k < 4; ++k) {
      total[k] += v[k];
      // csv: hours to the microhour, and no footnote marks.
      row.push_back(Fixed(v[k], csv && k < 2 ? 6 : 2) + (!csv && k >= 2 && !priced ? "*" : ""));
    }
    rows.push_back(std::move(row));
  }
  if (csv) {
    // Machine-readable: lower-case column names.
    for (std::string& h : rows[0]) {
      std::transform(h.begin(), h.end(), h.begin(),
                     [](char c) { return c == '-' ? '_' : static_cast<char>(std::tolower(c)); });
    }
    for (auto& row : rows) {
      for (size_t k = 0; k < row.size(); ++k) {
        std::string cell = row[k];
        if (cell.find_first_of(",\"\n") != std::string::npos) {
          std::string q = "\"";
          for (char c : cell) q += c == '"' ? std::string("\"\"") : std::string(1, c);
          cell = q + "\"";
        }
        out << cell << (k + 1 < row.size() ? "," : "\n");
      }
    }
    return 0;
  }
  if (rows.size() == 1) {
    out << "No usage between " << body.value("since", "") << " and " << body.value("until", "")
        << ".\n";
    return 0;
  }
  std::vector<std::string> sum = {"TOTAL"};
  if (o.usage_by == "job") sum.push_back("");
  for (double t : total) sum.push_back(Fixed(t, 2));
  rows.push_back(std::move(sum));
  PrintRows(rows, out);
  out << "from " << body.value("since", "") << " to " << body.value("until", "")
      << "; idle: GPUs below the idle threshold while allocated";
  if (unpriced) out << "; * some GPU models have no price";
  out << "\n";
  return 0;
}

// Allocation, from the bindings the scheduling loop wrote into Jobs' status.
int TopCommand(const ResourceOptions& o, std::ostream& out, std::ostream& err) {
  int code = 0;
  auto jobs = List(o, "/apis/tessera.io/v1/jobs", err, &code);
  if (!jobs) return code;
  std::vector<std::vector<std::string>> rows;
  if (o.top_what == "nodes" || o.top_what == "gpus") {
    auto nodes = List(o, "/apis/tessera.io/v1/nodes", err, &code);
    if (!nodes) return code;
    std::map<std::string, int64_t> by_node, by_gpu, cpu_by_node;
    std::map<std::string, int> pods_by_node, pods_by_gpu;
    for (const json& j : *jobs) {
      const json status = j.value("status", json::object());
      if (status.value("phase", "") != "Admitted") continue;
      for (const json& pod : status.value("pods", json::array())) {
        if (!pod.is_object()) continue;
        const std::string node = pod.value("node", "");
        ++pods_by_node[node];
        cpu_by_node[node] += pod.value("cpuMilli", int64_t{0});
        for (const json& d : pod.value("devices", json::array())) {
          by_node[node] += d.value("gpuMilli", int64_t{0});
          by_gpu[d.value("uuid", "")] += d.value("gpuMilli", int64_t{0});
          ++pods_by_gpu[d.value("uuid", "")];
        }
      }
    }
    if (o.top_what == "nodes") {
      rows.push_back({"NAME", "GPUS", "GPU ALLOCATED", "CPU ALLOCATED", "PODS", "SCHEDULABLE"});
      for (const json& n : *nodes) {
        const std::string name = n["metadata"].value("name", "");
        const json status = n.value("status", json::object());
        const size_t gpus = status.value("gpus", json::array()).size();
        const int64_t cpu = cpu_by_node[name];
        rows.push_back(
            {name, std::to_string(gpus),
             Gpus(by_node[name]) + " (" +
                 std::to_string(gpus ? by_node[name] / static_cast<int64_t>(gpus) / 10 : 0) + "%)",
             std::to_string(cpu) + "m", std::to_string(pods_by_node[name]),
             n.value("spec", json::object()).value("unschedulable", false) ? "no" : "yes"});
      }
    } else {
      rows.push_back({"NODE", "INDEX", "UUID", "MODEL", "ALLOCATED", "PODS", "HEALTH"});
      for (const json& n : *nodes) {
        const std::vector<std::string> cordoned = api::CordonedGpus(n);
        const auto quarantine = api::QuarantineOf(n);
        for (const json& g : n.value("status", json::object()).value("gpus", json::array())) {
          const std::string uuid = g.value("uuid", "");
          const int64_t index = g.value("index", int64_t{0});
          const std::string health = GpuHealthText(g, uuid, index, cordoned, quarantine);
          rows.push_back({n["metadata"].value("name", ""), std::to_string(index), uuid,
                          g.value("model", ""), std::to_string(by_gpu[uuid] / 10) + "%",
                          std::to_string(pods_by_gpu[uuid]), health});
        }
      }
    }
  } else if (o.top_what == "queues") {
    auto queues = List(o, "/apis/tessera.io/v1/queues", err, &code);
    if (!queues) return code;
    auto locals = List(o, "/apis/tessera.io/v1/localqueues", err, &code);
    if (!locals) return code;
    std::map<std::string, std::string> queue_of;  // "ns/local" -> queue
    for (const json& l : *locals) {
      queue_of[l["metadata"].value("namespace", "") + "/" + l["metadata"].value("name", "")] =
          l.value("spec", json::object()).value("clusterQueue", "");
    }
    std::map<std::string, int64_t> used;
    std::map<std::string, int> admitted, pending;
    for (const json& j : *jobs) {
      const json status = j.value("status", json::object());
      if (status.value("phase", "") == "Admitted") {
        const std::string q = status.value("queue", "");
        ++admitted[q];
        for (const json& pod : status.value("pods", json::array())) {
          if (!pod.is_object()) continue;
          for (const json& d : pod.value("devices", json::array())) {
            used[q] += d.value("gpuMilli", int64_t{0});
          }
        }
      } else {
        const std::string lq = j.value("spec", json::object()).value("queue", "");
        auto it = queue_of.find(j["metadata"].value("namespace", "") + "/" + lq);
        if (it != queue_of.end()) ++pending[it->second];
      }
    }
    rows.push_back(
        {"QUEUE", "COHORT", "GPU ALLOCATED", "GPU NOMINAL", "ADMITTED", "PENDING", "ACTIVE"});
    for (const json& q : *queues) {
      const std::string name = q["metadata"].value("name", "");
      const json spec = q.value("spec", json::object());
      double nominal = 0;
      for (const json& g : spec.value("resourceGroups", json::array())) {
        for (const json& f : g.value("flavors", json::array())) {
          for (const json& r : f.value("resources", json::array())) {
            if (r.value("name", "") != "nvidia.com/gpu") continue;
            const json n = r.value("nominalQuota", json(0));
            nominal += n.is_number() ? n.get<double>() : std::atof(n.get<std::string>().c_str());
          }
        }
      }
      const json status = q.value("status", json::object());
      std::ostringstream nom;
      nom << nominal;
      rows.push_back({name, spec.value("cohort", "<none>"), Gpus(used[name]), nom.str(),
                      std::to_string(admitted[name]), std::to_string(pending[name]),
                      status.contains("active") ? (status["active"].get<bool>() ? "true" : "false")
                                                : "unknown"});
    }
  } else {
    err << "error: top: expected nodes, gpus or queues, got \"" << o.top_what << "\"\n";
    return kUsage;
  }
  PrintRows(rows, out);
  return 0;
}

}  // namespace tessera::cli
