#include "fuzz/harness.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/json_text.h"
#include "api/manifest.h"
#include "api/patch.h"
#include "api/protobuf.h"
#include "api/status_schema.h"
#include "server/api_server.h"
#include "server/scheduling_loop.h"

namespace tessera::fuzz {

using nlohmann::json;

std::vector<std::string> Corpus(const std::string& seeds_dir) {
  std::vector<std::string> out;
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(seeds_dir, ec)) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    out.push_back(text.str());
  }
  const char* json_entries[] = {
      R"({"apiVersion":"tessera.io/v1","kind":"Job","metadata":{"name":"j","namespace":"team-a"},
"spec":{"queue":"main","minMember":2,"tasks":[{"name":"w","replicas":2,"command":["true"],
"env":{"A":"b"},"resources":{"limits":{"nvidia.com/gpu":1,"cpu":"2","memory":"4Gi"}}}]}})",
      R"({"apiVersion":"tessera.io/v1","kind":"Job","metadata":{"name":"j","namespace":"team-a"},
"spec":{"tasks":[{"name":"w","command":["true"]}]},"status":{"phase":"Admitted","queue":"main",
"priority":5,"admittedAt":"2026-01-01T00:00:00Z","pods":[{"name":"w-0","node":"n1",
"devices":[{"gpu":0,"kind":"whole"}],"state":{"phase":"Running","restarts":0}}]}})",
      R"({"apiVersion":"tessera.io/v1","kind":"Queue","metadata":{"name":"main"},
"spec":{"cohort":"all","resourceGroups":[{"coveredResources":["nvidia.com/gpu"],
"flavors":[{"name":"default","resources":[{"name":"nvidia.com/gpu","nominalQuota":8}]}]}]}})",
      R"({"apiVersion":"tessera.io/v1","kind":"Node","metadata":{"name":"n1"},
"status":{"allocatable":{"cpu":"8","memory":"64Gi"},"heartbeat":"2026-01-01T00:00:00Z",
"fenceSeconds":23,"gpus":[{"index":0,"uuid":"GPU-0","model":"H100-80GB","memoryMiB":81920}]}})",
      R"({"phase":"Pending","message":"waiting","queue":"main","priority":-3})",
      // Patches, whose growth is a property of its own (PatchGrowth).
      R"([{"op":"add","path":"/metadata/annotations","value":{"a":"xxxxxxxxxxxxxxxx"}},
{"op":"copy","from":"/metadata/annotations","path":"/metadata/annotations/b"},
{"op":"copy","from":"/metadata","path":"/metadata/annotations/c"},
{"op":"copy","from":"","path":"/spec/d"},{"op":"move","from":"/spec/d","path":"/e"}])",
      R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["x"],"finalizers":["y","z"]},
"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"a"}],
"containers":[{"name":"a","env":[{"name":"E","value":"1"}]},{"name":"b","$patch":"delete"}],
"$retainKeys":["containers"]}})",
  };
  for (const char* j : json_entries) out.push_back(j);
  return out;
}

Mutator::Mutator(uint64_t seed, std::vector<std::string> corpus)
    : rng_(seed), corpus_(std::move(corpus)) {}

std::string Mutator::Next() {
  static const char* kTokens[] = {"1e400",
                                  "-1",
                                  "99999999999999999999999",
                                  "0x10",
                                  "\xff\xfe",
                                  "\xc3\x28",
                                  "&a [1]",
                                  "*a",
                                  "<<: *a",
                                  "{",
                                  "}",
                                  "[",
                                  "]",
                                  "null",
                                  "\"\"",
                                  ": ",
                                  "\n- ",
                                  "\n---\n",
                                  "!!binary x",
                                  "{\"a\":1,\"a\":2}",
                                  "a..b",
                                  "\t",
                                  "\\u0000",
                                  "-9223372036854775809",
                                  "1.5",
                                  "true",
                                  "nvidia.com/gpu: 100000000",
                                  "replicas: 0",
                                  "status: {}",
                                  "kind: Job\n"};
  std::string s = corpus_[rng_() % corpus_.size()];
  const int rounds = 1 + static_cast<int>(rng_() % 4);
  for (int r = 0; r < rounds; ++r) {
    const size_t at = s.empty() ? 0 : rng_() % (s.size() + 1);
    switch (rng_() % 7) {
      case 0:  // flip a byte
        if (!s.empty()) s[at % s.size()] ^= static_cast<char>(1u << (rng_() % 8));
        break;
      case 1:  // insert a random byte
        s.insert(s.begin() + static_cast<ptrdiff_t>(at), static_cast<char>(rng_() % 256));
        break;
      case 2: {  // delete a range
        const size_t n = std::min<size_t>(s.size() - std::min(at, s.size()), rng_() % 64);
        s.erase(std::min(at, s.size()), n);
        break;
      }
      case 3: {  // duplicate a range
        if (s.empty()) break;
        const size_t from = rng_() % s.size();
        const size_t n = std::min<size_t>(s.size() - from, 1 + rng_() % 128);
        s.insert(at, s.substr(from, n));
        break;
      }
      case 4: {  // splice with another entry
        const std::string& other = corpus_[rng_() % corpus_.size()];
        const size_t from = other.empty() ? 0 : rng_() % other.size();
        s = s.substr(0, at) + other.substr(from);
        break;
      }
      default:  // a troublesome token
        s.insert(at, kTokens[rng_() % (sizeof kTokens / sizeof kTokens[0])]);
        break;
    }
  }
  if (s.size() > (1u << 20)) s.resize(1u << 20);
  return s;
}

Target::Target(const std::string& data_dir) {
  std::filesystem::create_directories(data_dir);
  plane_ = server::ControlPlane::Open(data_dir).value();
  api_ = std::make_unique<server::ApiServer>(*plane_);
  api_->set_clock([this] { return now_ms_; });
  std::ifstream in(data_dir + "/admin.token");
  std::getline(in, admin_);
  server::HttpRequest mint;
  mint.method = "POST";
  mint.path = "/apis/tessera.io/v1/tokens";
  mint.authorization = "Bearer " + admin_;
  mint.content_type = "application/json";
  mint.body = R"({"namespace": "team-a"})";
  tenant_ = json::parse(api_->Handle(mint).body).value("token", "");
  loop_ = server::SchedulingLoop::Create(*plane_).value();
}

Target::~Target() = default;

Status PatchGrowth(std::string_view input) {
  auto patch = api::ParseJson(input);
  if (!patch.ok()) return Status::Ok();
  static const json target = json::parse(R"({"apiVersion":"v1","kind":"Pod",
    "metadata":{"name":"p","labels":{"a":"b"},"finalizers":["x"]},
    "spec":{"containers":[{"name":"a","image":"i","env":[{"name":"E","value":"0"}]},
    {"name":"b","image":"i"}]}})");
  for (api::PatchType type :
       {api::PatchType::kMerge, api::PatchType::kStrategicMerge, api::PatchType::kJson}) {
    Result<json> out = api::ApplyPatch(target, *patch, type);
    if (!out.ok()) continue;
    // Merges by their exact text; a JSON patch by the measure its bound is kept with.
    const bool merge = type != api::PatchType::kJson;
    const size_t before = merge ? target.dump().size() : api::JsonTextSize(target);
    const size_t after = merge ? out->dump().size() : api::JsonTextSize(*out);
    // A merge adds at most what its body holds; a JSON patch's copies may grow it further, to
    // the object size limit and never past it.
    const size_t bound = type == api::PatchType::kJson ? api::kMaxObjectBytes
                                                       : before + kMergeGrowth * input.size() + 64;
    if (after > bound) {
      return Internal("a patch of " + std::to_string(input.size()) + " bytes grew an object of " +
                      std::to_string(before) + " to " + std::to_string(after) + " bytes (bound " +
                      std::to_string(bound) + ")");
    }
  }
  return Status::Ok();
}

Status Target::Run(std::string_view input) {
  ++runs_;
  TESSERA_RETURN_IF_ERROR(PatchGrowth(input));
  // The readers, directly.
  if (auto v = api::ParseJson(input); v.ok()) {
    (void)api::ValidateStatus("Job", *v);
    (void)api::ValidateStatus("Queue", *v);
  }
  (void)api::TranslateManifest(input, "fuzz.yaml", "default");
  (void)api::KubeProtobufToJson(input);
  (void)api::KubeProtobufToJson(std::string("k8s\0", 4) + std::string(input));

  // The API, as a request chosen by the input's first byte.
  struct Shape {
    const char* method;
    const char* path;
    const char* content_type;
    bool tenant;
  };
  static const Shape kShapes[] = {
      {"POST", "/apis/tessera.io/v1/apply", "application/yaml", false},
      {"POST", "/apis/tessera.io/v1/apply", "application/yaml", true},
      {"POST", "/apis/tessera.io/v1/apply", "application/json", false},
      {"POST", "/apis/tessera.io/v1/namespaces/team-a/jobs", "application/json", true},
      {"PUT", "/apis/tessera.io/v1/namespaces/team-a/jobs/j", "application/json", false},
      {"POST", "/apis/tessera.io/v1/nodes", "application/json", false},
      {"POST", "/apis/tessera.io/v1/queues", "application/json", false},
      {"POST", "/apis/tessera.io/v1/tokens", "application/json", false},
      {"PATCH", "/apis/tessera.io/v1/namespaces/team-a/jobs/j", "application/merge-patch+json",
       false},
      {"PATCH", "/apis/batch/v1/namespaces/default/jobs/llm-training",
       "application/json-patch+json", true},
      // The Kubernetes kinds' paths (the seeds' objects, when applied, are there to patch).
      {"POST", "/api/v1/namespaces/team-a/pods", "application/json", true},
      {"POST", "/apis/batch/v1/namespaces/team-a/jobs", "application/json", true},
      {"PATCH", "/api/v1/namespaces/default/pods/gpu-training",
       "application/strategic-merge-patch+json", false},
      {"PATCH", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/gpu-cluster-queue",
       "application/merge-patch+json", false},
      {"PUT", "/api/v1/namespaces/kube-system/configmaps/time-slicing-config", "application/json",
       false},
      // Server-side apply, onto an applied seed and creating.
      {"PATCH", "/apis/batch/v1/namespaces/default/jobs/llm-training",
       "application/apply-patch+yaml", false},
      {"PATCH", "/api/v1/namespaces/team-a/pods/p", "application/apply-patch+yaml", true},
      // tessera exec's session opening, as a tenant.
      {"POST", "/apis/tessera.io/v1/namespaces/team-a/jobs/j/exec", "application/json", true},
  };
  // JSON bodies go to the JSON endpoints, the rest to apply as YAML; which one of those, the
  // input's size decides.
  const size_t first = input.find_first_not_of(" \t\r\n");
  const bool looks_json =
      first != std::string_view::npos && (input[first] == '{' || input[first] == '[');
  const size_t yaml_shapes = 2;
  const size_t json_shapes = sizeof kShapes / sizeof kShapes[0] - yaml_shapes;
  const Shape& shape = looks_json ? kShapes[yaml_shapes + input.size() % json_shapes]
                                  : kShapes[input.size() % yaml_shapes];
  server::HttpRequest req;
  req.method = shape.method;
  req.path = shape.path;
  req.content_type = shape.content_type;
  if (req.content_type == "application/apply-patch+yaml") req.query["fieldManager"] = "fuzz";
  req.authorization = "Bearer " + (shape.tenant ? tenant_ : admin_);
  req.body = std::string(input);
  const int64_t before = plane_->store().Revision();
  const server::HttpResponse out = api_->Handle(req);
  if (out.status >= 500) {
    return Internal(std::string(shape.method) + " " + shape.path + " answered " +
                    std::to_string(out.status) + ": " + out.body);
  }
  if (out.status < 300) ++accepted_;
  if (out.status >= 400 && plane_->store().Revision() != before) {
    return Internal(std::string(shape.method) + " " + shape.path + " was refused (" +
                    std::to_string(out.status) + ") but changed the store");
  }
  if (!api::ParseJson(out.body).ok() && out.content_type == "application/json") {
    return Internal("the response is not JSON: " + api::SafeText(out.body, 200));
  }
  // A GET of the input as a path, where the HTTP layer would pass it on (UTF-8).
  if (input.size() < 512 && api::ValidUtf8(input)) {
    server::HttpRequest get;
    get.method = "GET";
    static const char* kPrefixes[] = {"/apis/tessera.io/v1/", "/api/v1/", "/apis/", "/openapi/v3/"};
    get.path = kPrefixes[input.size() % 4] + std::string(input);
    get.authorization = "Bearer " + tenant_;
    const server::HttpResponse got = api_->Handle(get);
    if (got.status >= 500) return Internal("GET " + api::SafeText(get.path, 200) + ": 5xx");
  }
  // What was stored goes through the scheduling loop now and then.
  if (runs_ % 16 == 0) {
    now_ms_ += 1000;
    ++cycles_;
    auto cycle = loop_->RunOnce(now_ms_);
    if (!cycle.ok()) return Internal("scheduling cycle: " + cycle.status().message());
  }
  return Status::Ok();
}

}  // namespace tessera::fuzz
