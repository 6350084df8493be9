// Kubeflow's PyTorchJob, MPIJob and TFJob as Tessera Jobs, one gang each (see
// api/translate.h).
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "api/fields.h"
#include "api/kinds.h"
#include "api/kube_fields.h"
#include "api/object.h"
#include "api/quantity.h"
#include "api/resources.h"
#include "api/translate.h"

namespace tessera::api::translate {

using nlohmann::json;

namespace {

// What every Kubeflow job starts from: its spec (its fields checked against `spec_type`), its
// runPolicy, and the Job being made with the runPolicy applied: its queue
// (schedulingPolicy.queue, else Kueue's label), priority class, suspend and lifetime; what
// Tessera does not act on is warned.
struct KubeflowStart {
  const json* spec = nullptr;
  const json* run = nullptr;
  json job = json::object();
  json annotations;
};
Result<KubeflowStart> StartKubeflow(const Doc& d, const json& doc, std::string_view spec_type,
                                    Warnings* warnings) {
  KubeflowStart start;
  start.spec = &Member(doc, "spec");
  TESSERA_RETURN_IF_ERROR(KnownFields(*start.spec, "spec", KubeFieldsOf(spec_type), warnings));
  const json& run = Member(*start.spec, "runPolicy");
  start.run = &run;
  start.annotations = Member(d.meta, "annotations");
  json* job = &start.job;
  json* annotations = &start.annotations;
  TESSERA_RETURN_IF_ERROR(KnownFields(run, "spec.runPolicy", KubeFieldsOf("RunPolicy"), warnings));
  QueueFromLabel(d.meta, job);
  const json& sched = Member(run, "schedulingPolicy");
  TESSERA_RETURN_IF_ERROR(KnownFields(sched, "spec.runPolicy.schedulingPolicy",
                                      KubeFieldsOf("SchedulingPolicy"), warnings));
  VolcanoQueue(sched, job, annotations);
  if (Member(sched, "priorityClass").is_string()) {
    (*job)["priorityClassName"] = sched["priorityClass"];
  }
  if (Member(run, "suspend") == true) (*job)["suspend"] = true;
  CopyLifetime(run, job);
  return start;
}

// The gang of a Kubeflow job of `total` pods: schedulingPolicy.minAvailable, else `otherwise`.
Result<int64_t> KubeflowGang(const json& sched, int64_t total, int64_t otherwise) {
  const json& m = Member(sched, "minAvailable");
  if (m.empty()) return otherwise;
  if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > total) {
    return FieldError(
        "spec.runPolicy.schedulingPolicy.minAvailable",
        "must be an integer from 1 to the job's replicas (" + std::to_string(total) + ")");
  }
  return m.get<int64_t>();
}

Result<json> KubeflowTask(const Doc& d, const json& rs, const std::string& p,
                          const std::string& name, const json& run, json* job, Warnings* warnings);

}  // namespace

// Kubeflow's MPIJob (kubeflow.org/v1 of the training operator, v2beta1 of the MPI operator): a
// Launcher that runs mpirun and Workers, one gang. The launcher reaches the workers through
// tessera exec (the agent gives it a hostfile and an rsh agent), not ssh; a worker without a
// command waits for it, as the operator's do.
Result<std::vector<json>> MpiJob(const Doc& d, const json& doc, Warnings* warnings) {
  auto start = StartKubeflow(d, doc, "MPIJobSpec", warnings);
  if (!start.ok()) return start.status();
  const json &spec = *start->spec, &run = *start->run;
  json &job = start->job, &annotations = start->annotations;
  if (const json& impl = Member(spec, "mpiImplementation");
      !impl.empty() && impl != "OpenMPI" && impl != "Intel" && impl != "MPICH") {
    return FieldError("spec.mpiImplementation", "must be OpenMPI, Intel or MPICH");
  }
  if (Member(spec, "runLauncherAsWorker") == true) {
    return FieldError("spec.runLauncherAsWorker",
                      "not supported: the launcher runs no ranks; add a worker instead");
  }
  const json& slots = Member(spec, "slotsPerWorker");
  if (!slots.empty() &&
      (!slots.is_number_integer() || slots.get<int64_t>() < 1 || slots.get<int64_t>() > 1024)) {
    return FieldError("spec.slotsPerWorker", "must be an integer from 1 to 1024");
  }
  const json& specs = Member(spec, "mpiReplicaSpecs");
  if (!specs.is_object() || !specs.contains("Launcher") || !specs.contains("Worker")) {
    return FieldError("spec.mpiReplicaSpecs", "must name a Launcher and Workers");
  }
  for (const auto& [type, _] : specs.items()) {
    if (type != "Launcher" && type != "Worker") {
      return FieldError("spec.mpiReplicaSpecs." + type, "must be Launcher or Worker");
    }
  }
  json tasks = json::array();
  int64_t total = 0;
  for (const char* type : {"Launcher", "Worker"}) {
    const std::string p = std::string("spec.mpiReplicaSpecs.") + type;
    const bool launcher = std::string(type) == "Launcher";
    const json& rs = Member(specs, type);
    if (launcher && !Member(rs, "replicas").empty() && Member(rs, "replicas") != 1) {
      return FieldError(p + ".replicas", "must be 1: an MPIJob has one launcher");
    }
    auto made = KubeflowTask(d, rs, p, launcher ? "launcher" : "worker", run, &job, warnings);
    if (!made.ok()) return made.status();
    json task = std::move(made).value();
    if (!launcher && !task.contains("command") && !task.contains("args")) {
      task["command"] = {"sleep", "365d"};
    }
    total += task["replicas"].get<int64_t>();
    tasks.push_back(std::move(task));
  }
  job["tasks"] = tasks;
  job["mpi"] = {{"launcher", "launcher"}, {"slotsPerWorker", slots.empty() ? json(1) : slots}};
  job["completesWith"] = "launcher";
  auto gang = KubeflowGang(Member(run, "schedulingPolicy"), total, total);
  if (!gang.ok()) return gang.status();
  job["minMember"] = *gang;
  return std::vector<json>{Object("Job", d.name, d.ns, Member(d.meta, "labels"), annotations, job)};
}

// Kubeflow's TFJob (kubeflow.org/v1): Chief (or Master), PS, Worker and Evaluator replicas,
// one gang; each pod gets TF_CONFIG with every server's address and port (a port Tessera
// reserves on its node). The job completes with its chief, else as its successPolicy says.
Result<std::vector<json>> TfJob(const Doc& d, const json& doc, Warnings* warnings) {
  auto start = StartKubeflow(d, doc, "TFJobSpec", warnings);
  if (!start.ok()) return start.status();
  const json &spec = *start->spec, &run = *start->run;
  json &job = start->job, &annotations = start->annotations;
  const json& success = Member(spec, "successPolicy");
  if (!success.empty() && success != "" && success != "AllWorkers") {
    return FieldError("spec.successPolicy",
                      "must be \"\" (the chief, else worker 0) or AllWorkers");
  }
  const json& specs = Member(spec, "tfReplicaSpecs");
  static const char* kTypes[] = {"Chief", "Master", "PS", "Worker", "Evaluator"};
  if (!specs.is_object() || specs.empty()) {
    return FieldError("spec.tfReplicaSpecs", "must name Chief, PS, Worker or Evaluator replicas");
  }
  for (const auto& [type, _] : specs.items()) {
    if (std::find_if(std::begin(kTypes), std::end(kTypes),
                     [&](const char* t) { return type == t; }) == std::end(kTypes)) {
      return FieldError("spec.tfReplicaSpecs." + type,
                        "must be Chief, Master, PS, Worker or Evaluator");
    }
  }
  if (specs.contains("Chief") && specs.contains("Master")) {
    return FieldError("spec.tfReplicaSpecs.Master", "a TFJob has a Chief or a Master, not both");
  }
  json tasks = json::array();
  int64_t total = 0;
  std::string chief;
  for (const char* type : kTypes) {
    const json& rs = Member(specs, type);
    if (rs.empty()) continue;
    const std::string p = std::string("spec.tfReplicaSpecs.") + type;
    std::string name = type;
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool is_chief = name == "chief" || name == "master";
    if ((is_chief || name == "evaluator") && !Member(rs, "replicas").empty() &&
        Member(rs, "replicas") != 1) {
      return FieldError(p + ".replicas", "must be 1");
    }
    auto made = KubeflowTask(d, rs, p, name, run, &job, warnings);
    if (!made.ok()) return made.status();
    if (is_chief) chief = name;
    total += (*made)["replicas"].get<int64_t>();
    tasks.push_back(std::move(made).value());
  }
  job["tasks"] = tasks;
  job["tfConfig"] = true;
  if (!chief.empty()) {
    job["completesWith"] = chief;
  } else if (specs.contains("Worker")) {
    job["completesWith"] = success == "AllWorkers" ? "worker" : "worker-0";
  }
  auto gang = KubeflowGang(Member(run, "schedulingPolicy"), total, total);
  if (!gang.ok()) return gang.status();
  job["minMember"] = *gang;
  return std::vector<json>{Object("Job", d.name, d.ns, Member(d.meta, "labels"), annotations, job)};
}

namespace {

// One replica type of a Kubeflow job (its replicaSpecs entry at `p`) as one task named `name`:
// its pods' template, restartPolicy (ExitCode warned, run as OnFailure) and the run policy's
// backoffLimit.
Result<json> KubeflowTask(const Doc& d, const json& rs, const std::string& p,
                          const std::string& name, const json& run, json* job, Warnings* warnings) {
  TESSERA_RETURN_IF_ERROR(KnownFields(rs, p, KubeFieldsOf("ReplicaSpec"), warnings));
  const json& replicas = Member(rs, "replicas");
  if (!replicas.empty() && (!replicas.is_number_integer() || replicas.get<int64_t>() < 1)) {
    return FieldError(p + ".replicas", "must be a positive integer");
  }
  json task = {{"name", name}, {"replicas", replicas.empty() ? 1 : replicas.get<int64_t>()}};
  const json& tmpl = Member(rs, "template");
  TESSERA_RETURN_IF_ERROR(
      KnownFields(tmpl, p + ".template", KubeFieldsOf("PodTemplateSpec"), warnings));
  const PodContext ctx{d.ns, &Member(tmpl, "metadata"), false, "", warnings};
  TESSERA_RETURN_IF_ERROR(
      PodSpecToTask(Member(tmpl, "spec"), p + ".template.spec", ctx, &task, job));
  // The replica's restartPolicy is the operator's for its pods; ExitCode restarts on the
  // retryable codes, which Tessera does not tell apart.
  if (const json& rp = Member(rs, "restartPolicy"); !rp.empty()) {
    if (rp == "ExitCode") {
      warnings->push_back(p +
                          ".restartPolicy: ExitCode: not acted on: a failed pod restarts as "
                          "with OnFailure, whatever its exit code");
      task["restartPolicy"] = "OnFailure";
    } else if (rp == "Always" || rp == "OnFailure" || rp == "Never") {
      task["restartPolicy"] = rp;
    } else {
      return FieldError(p + ".restartPolicy", "must be Always, OnFailure, Never or ExitCode");
    }
  }
  if (Member(run, "backoffLimit").is_number_integer()) task["maxRetries"] = run["backoffLimit"];
  return task;
}

}  // namespace

// Kubeflow's PyTorchJob (kubeflow.org/v1): a Master and Workers, one gang (the training
// operator's schedulingPolicy.minAvailable, else the elastic minimum, else every replica).
Result<std::vector<json>> PyTorchJob(const Doc& d, const json& doc, Warnings* warnings) {
  auto start = StartKubeflow(d, doc, "PyTorchJobSpec", warnings);
  if (!start.ok()) return start.status();
  const json &spec = *start->spec, &run = *start->run;
  json &job = start->job, &annotations = start->annotations;
  const json& sched = Member(run, "schedulingPolicy");
  const json& specs = Member(spec, "pytorchReplicaSpecs");
  if (!specs.is_object() || specs.empty()) {
    return FieldError("spec.pytorchReplicaSpecs", "must name a Master and/or Workers");
  }
  for (const auto& [type, _] : specs.items()) {
    if (type != "Master" && type != "Worker") {
      return FieldError("spec.pytorchReplicaSpecs." + type, "must be Master or Worker");
    }
  }
  const json& elastic = Member(spec, "elasticPolicy");
  TESSERA_RETURN_IF_ERROR(
      KnownFields(elastic, "spec.elasticPolicy", KubeFieldsOf("ElasticPolicy"), warnings));
  json tasks = json::array();
  int64_t total = 0, masters = 0;
  for (const char* type : {"Master", "Worker"}) {
    const json& rs = Member(specs, type);
    if (rs.empty()) continue;
    const std::string p = std::string("spec.pytorchReplicaSpecs.") + type;
    if (std::string(type) == "Master" && !Member(rs, "replicas").empty() &&
        Member(rs, "replicas") != 1) {
      return FieldError(p + ".replicas", "must be 1: a PyTorchJob has one master");
    }
    auto made = KubeflowTask(d, rs, p, std::string(type) == "Master" ? "master" : "worker", run,
                             &job, warnings);
    if (!made.ok()) return made.status();
    json task = std::move(made).value();
    const int64_t n = task["replicas"].get<int64_t>();
    // torchrun's processes per pod, as the operator gives them.
    const json& nproc =
        spec.contains("nprocPerNode") ? spec["nprocPerNode"] : Member(elastic, "nProcPerNode");
    if (nproc.is_string() || nproc.is_number_integer()) {
      if (!task["env"].is_object()) task["env"] = json::object();
      task["env"]["PET_NPROC_PER_NODE"] =
          nproc.is_string() ? nproc.get<std::string>() : std::to_string(nproc.get<int64_t>());
    }
    total += n;
    if (std::string(type) == "Master") masters = n;
    tasks.push_back(std::move(task));
  }
  job["tasks"] = tasks;
  // The gang: the scheduling policy's minimum, else the elastic minimum (the master and
  // minReplicas workers), else every replica.
  int64_t min_member = total;
  if (const json& m = Member(elastic, "minReplicas"); m.is_number_integer()) {
    const json& max = Member(elastic, "maxReplicas");
    if (m.get<int64_t>() < 1 ||
        (max.is_number_integer() && max.get<int64_t>() < m.get<int64_t>())) {
      return FieldError("spec.elasticPolicy.minReplicas",
                        "must be at least 1 and at most maxReplicas");
    }
    if (max.is_number_integer() && total - masters > max.get<int64_t>()) {
      return FieldError("spec.pytorchReplicaSpecs.Worker.replicas",
                        "must not exceed spec.elasticPolicy.maxReplicas (" + max.dump() + ")");
    }
    min_member = std::min(total, masters + m.get<int64_t>());
  }
  auto gang = KubeflowGang(sched, total, min_member);
  if (!gang.ok()) return gang.status();
  job["minMember"] = *gang;
  return std::vector<json>{Object("Job", d.name, d.ns, Member(d.meta, "labels"), annotations, job)};
}

}  // namespace tessera::api::translate
