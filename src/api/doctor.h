// `tessera doctor`: what is wrong, the evidence, what it means and the fix, for the faults GPU
// platform teams meet (seed 001's list: a GPU not visible, Xid errors, CUDA out of memory, slow
// training, a driver/library version mismatch) and Tessera's own misconfigurations. Pure: the
// checks read API objects (Nodes as their agents report them, Jobs, queues) and the time, and
// return findings; the CLI fetches the objects and prints the findings.
//
// Checks, by subject:
//   node and GPU (doctor_gpus.cc)   the agent's heartbeat, expected GPU count, VBIOS
//     consistency, unhealthy or cordoned GPUs, ECC uncorrected errors, retired pages, row
//     remapping, recent Xids by NVIDIA's catalog action and age, NVLink links and errors, PCIe
//     link width and generation, throttling, processes on GPUs no task holds;
//   scheduler (doctor_queues.cc)    queues that admit no namespace, flavors no node has, nominal
//     quotas beyond capacity, LocalQueues that point nowhere, devices bound that a node does not
//     report, pending Jobs with their reason, place in queue and whether they can ever fit;
//   workload (doctor_jobs.cc)       CUDA out of memory in a task's log, tied to its share;
//     a running Job's GPUs idle or starved.
#ifndef TESSERA_API_DOCTOR_H_
#define TESSERA_API_DOCTOR_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::api {

enum class Severity { kInfo, kWarning, kCritical };

struct Finding {
  Severity severity = Severity::kInfo;
  std::string check;    // a stable name: "gpu.ecc-uncorrected", "queue.no-namespace", ...
  std::string subject;  // "node/n1", "node/n1/gpu/0", "queue/q", "job/team-a/train"
  std::string summary;  // what is wrong, in one line
  std::vector<std::string> evidence;  // values and times
  std::string meaning;                // what it means
  std::string fix;                    // what to do about it
};

// A finding with its first fields; the check fills in evidence, meaning and fix.
Finding MakeFinding(Severity s, std::string check, std::string subject, std::string summary);

// What the doctor reads, as the API serves it.
struct DoctorInput {
  int64_t now_ms = 0;
  std::vector<nlohmann::json> nodes, jobs, queues, local_queues, flavors, namespaces;
  // The events of tessera-system (the nodes' and the quarantine's).
  std::vector<nlohmann::json> system_events;
  // A task's log by "namespace/job/pod" (only the Jobs a job check looks at).
  std::map<std::string, std::string> logs;
  // Where each waiting Job stands, as the scheduler's last cycle ordered its queue: the items of
  // GET /apis/tessera.io/v1/pendingworkloads by "namespace/name"; empty when the server has no
  // order to give (a replica that does not lead), and then the checks count older Jobs ahead.
  std::map<std::string, nlohmann::json> places;
};

// Node and GPU checks of one Node object.
std::vector<Finding> CheckNode(const nlohmann::json& node, int64_t now_ms);
// The scheduler's checks over the whole input.
std::vector<Finding> CheckScheduling(const DoctorInput& in);
// A Job's checks: its pending state, CUDA OOM in its logs, its GPUs' use.
std::vector<Finding> CheckJob(const nlohmann::json& job, const DoctorInput& in);

// The control plane: the server's /metrics (Prometheus text) and, on etcd, `tessera store
// status`'s report (null without one): commit failures, watch lag, no leader, lagging replicas,
// unreachable members, the database near its quota, alarms (doctor_control.cc).
std::vector<Finding> CheckControlPlane(const nlohmann::json* store_status,
                                       std::string_view metrics);
// `dcgmi diag -r 1 -j`'s report on this node: each failed or warned test (doctor_dcgm.cc).
std::vector<Finding> CheckDcgmDiag(const std::string& node, const std::string& output,
                                   int exit_code);

// NVML could not start on this node (`tessera doctor --local`): the finding for its error text
// ("Driver/library version mismatch", "Driver Not Loaded", no libnvidia-ml).
Finding NvmlStartFinding(const std::string& node, const std::string& error);

// Most severe first, then by subject and check.
void SortFindings(std::vector<Finding>* findings);
std::string_view SeverityName(Severity s);  // "info", "warning", "critical"
nlohmann::json FindingsJson(const std::vector<Finding>& findings);
std::string FindingsText(const std::vector<Finding>& findings);

}  // namespace tessera::api

#endif  // TESSERA_API_DOCTOR_H_
