// The status Kueue and Volcano keep on their queue objects, as views of Tessera's Jobs, Queues
// and PodGroups: Kueue's Workloads and ClusterQueue / LocalQueue status, Volcano's PodGroup and
// Queue status.
#ifndef TESSERA_API_QUEUE_VIEWS_H_
#define TESSERA_API_QUEUE_VIEWS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessera::api {

// Kueue's view of the work that goes through queues. A Workload per Job that names a queue
// (spec.queue), named <kind>-<job> as Kueue names them ("job-llm-training", "pod-x",
// "tessera-job-y"): spec.queueName and podSets, status.admission (clusterQueue, flavors per
// resource) and the QuotaReserved, Admitted and Finished conditions. Null for a Job without a
// queue.
nlohmann::json KueueWorkload(const nlohmann::json& job);
// A condition of a Job's status as Kueue writes a Workload's (QuotaReserved, Admitted, Evicted,
// Preempted): every field set, its transition at `now_ms`.
nlohmann::json WorkloadCondition(const char* type, bool status, const std::string& reason,
                                 const std::string& message, int64_t now_ms);

// The status Kueue keeps on a ClusterQueue or LocalQueue view (`view`, kind read from it):
// pendingWorkloads, reservingWorkloads, admittedWorkloads and flavorsUsage (for LocalQueues
// flavorUsage), from the Jobs (served form) and the LocalQueues (stored Tessera objects, to tell
// which ClusterQueue a pending job's queue points at).
void AddQueueStatus(const std::vector<nlohmann::json>& jobs,
                    const std::vector<nlohmann::json>& local_queues, nlohmann::json* view);

// Volcano's status on a PodGroup view: phase (Pending; Inqueue once a member Job is admitted;
// Running once minMember pods run; Completed when every member Job succeeded), and the running,
// succeeded and failed pod counts of the Jobs (served form) that join it (spec.podGroup).
void AddPodGroupStatus(const std::vector<nlohmann::json>& jobs, nlohmann::json* view);

// Whether a stored Tessera Queue is a Volcano Queue closed by a CloseQueue command (its
// stopPolicy is set).
bool VolcanoQueueClosed(const nlohmann::json& queue);

// Volcano's status on a Queue view made from the Tessera Queue `queue`: state (Open; a closed
// queue is Closing while any PodGroup is in it and Closed once none is, as Volcano's queue
// controller keeps it) and the number of its PodGroups by phase (pending, inqueue, running,
// completed). Its PodGroups are the PodGroups (stored) that name it and the Jobs (served form)
// that name it without joining a PodGroup.
void AddVolcanoQueueStatus(const nlohmann::json& queue, const std::vector<nlohmann::json>& jobs,
                           const std::vector<nlohmann::json>& pod_groups, nlohmann::json* view);

}  // namespace tessera::api

#endif  // TESSERA_API_QUEUE_VIEWS_H_
