#include "api/gpu_quarantine.h"

#include <algorithm>

#include "api/fields.h"
#include "api/gpu_checkup.h"
#include "api/json_read.h"
#include "api/time.h"

namespace tessera::api {

using nlohmann::json;

namespace {

constexpr const char* kPath = "metadata.annotations[tessera.io/gpu-quarantine]";

Status Bad(const std::string& what) { return FieldError(kPath, what); }

Status Time(Fields& f, const char* key, int64_t* out, bool required) {
  std::string text;
  TESSERA_RETURN_IF_ERROR(f.String(key, &text, required));
  if (text.empty()) return Status::Ok();
  *out = ParseTime(text);
  if (*out < 0) return FieldError(f.At(key), "must be an RFC 3339 time");
  return Status::Ok();
}

}  // namespace

Result<core::NodeQuarantine> QuarantineOf(const json& node) {
  core::NodeQuarantine q;
  const json& value = Member(Member(Member(node, "metadata"), "annotations"),
                             std::string(kGpuQuarantineAnnotation).c_str());
  if (value.is_null()) return q;
  if (!value.is_string()) return Bad("must be a string of JSON");
  if (value.get_ref<const std::string&>().empty()) return q;
  const json doc = json::parse(value.get_ref<const std::string&>(), nullptr, false);
  if (!doc.is_object()) return Bad("must be a JSON object");
  Fields top(doc, kPath, false);
  if (const json* gpus = top.Get("gpus")) {
    if (!gpus->is_array() || gpus->size() > 64) return Bad("gpus: must be a list of GPUs");
    for (size_t i = 0; i < gpus->size(); ++i) {
      Fields g((*gpus)[i], Index(std::string(kPath) + ".gpus", i), false);
      core::QuarantinedGpu e;
      int64_t xid = 0;
      TESSERA_RETURN_IF_ERROR(g.Int("index", &e.gpu, 0, 63, true));
      TESSERA_RETURN_IF_ERROR(g.Int("xid", &xid, 0, int64_t{1} << 40, true));
      TESSERA_RETURN_IF_ERROR(Time(g, "since", &e.since_ms, true));
      TESSERA_RETURN_IF_ERROR(g.Bool("resetRequested", &e.reset_requested));
      TESSERA_RETURN_IF_ERROR(g.Finish());
      e.xid = static_cast<uint64_t>(xid);
      q.gpus.push_back(e);
    }
  }
  if (const json* r = top.Get("reboot")) {
    Fields f(*r, std::string(kPath) + ".reboot", false);
    core::RebootMark m;
    int64_t xid = 0;
    TESSERA_RETURN_IF_ERROR(f.Int("xid", &xid, 0, int64_t{1} << 40, true));
    TESSERA_RETURN_IF_ERROR(Time(f, "since", &m.since_ms, true));
    TESSERA_RETURN_IF_ERROR(f.String("bootId", &m.boot_id));
    TESSERA_RETURN_IF_ERROR(f.Finish());
    m.xid = static_cast<uint64_t>(xid);
    q.reboot = m;
  }
  TESSERA_RETURN_IF_ERROR(Time(top, "handledUntil", &q.handled_until_ms, false));
  TESSERA_RETURN_IF_ERROR(top.Finish());
  return q;
}

std::string QuarantineText(const core::NodeQuarantine& q) {
  json doc = json::object();
  if (!q.gpus.empty()) {
    json gpus = json::array();
    for (const core::QuarantinedGpu& g : q.gpus) {
      gpus.push_back({{"index", g.gpu},
                      {"xid", g.xid},
                      {"since", FormatTime(g.since_ms)},
                      {"resetRequested", g.reset_requested}});
    }
    doc["gpus"] = gpus;
  }
  if (q.reboot) {
    doc["reboot"] = {{"xid", q.reboot->xid},
                     {"since", FormatTime(q.reboot->since_ms)},
                     {"bootId", q.reboot->boot_id}};
  }
  if (q.handled_until_ms > 0) doc["handledUntil"] = FormatTime(q.handled_until_ms);
  return doc.empty() ? "" : doc.dump();
}

json WithQuarantine(json node, const core::NodeQuarantine& q) {
  const std::string text = QuarantineText(q);
  json& annotations = node["metadata"]["annotations"];
  if (text.empty()) {
    if (annotations.is_object()) annotations.erase(std::string(kGpuQuarantineAnnotation));
    if (annotations.is_object() && annotations.empty()) node["metadata"].erase("annotations");
  } else {
    annotations[std::string(kGpuQuarantineAnnotation)] = text;
  }
  return node;
}

Result<core::NodeHealthReport> HealthReportOf(const json& node) {
  auto state = QuarantineOf(node);
  if (!state.ok()) return state.status();
  core::NodeHealthReport r;
  r.node = Str(Member(node, "metadata"), "name");
  r.state = std::move(state).value();
  const json& status = Member(node, "status");
  const json& gpus = Member(status, "gpus");
  r.gpu_count = gpus.is_array() ? static_cast<int64_t>(gpus.size()) : 0;
  if (auto x = DecodeXids(status.contains("xids") ? &status["xids"] : nullptr); x.ok()) {
    for (const XidSeen& s : *x) {
      r.xids.push_back({s.gpu, static_cast<uint64_t>(s.xid), ParseTime(s.time)});
    }
  }
  for (const json& e : Member(status, "resets").is_array() ? status["resets"] : json::array()) {
    if (!e.is_object()) continue;
    r.resets.push_back(
        {e.value("gpu", int64_t{-1}), ParseTime(e.value("time", "")), e.value("ok", false)});
  }
  if (const json& boot = Member(status, "bootId"); boot.is_string()) r.boot_id = boot;
  // Passing: healthy, no uncorrected ECC error since the driver loaded or the GPU reset, no
  // pending retirement or remap, no failed remap.
  std::vector<GpuCheckupView> checkups;
  if (auto c = DecodeCheckups(status.contains("checkups") ? &status["checkups"] : nullptr);
      c.ok()) {
    checkups = std::move(c).value();
  }
  const json& telemetry = Member(status, "telemetry");
  for (const json& g : gpus.is_array() ? gpus : json::array()) {
    if (!g.is_object() || g.value("health", "Healthy") != "Healthy") continue;
    const int64_t index = g.value("index", int64_t{-1});
    bool clean = true;
    for (const json& t : telemetry.is_array() ? telemetry : json::array()) {
      if (t.is_object() && t.value("index", -1) == index && t.value("eccUncorrected", 0) > 0) {
        clean = false;
      }
    }
    for (const GpuCheckupView& c : checkups) {
      if (c.index == index && (c.retire_pending || c.remap_pending || c.remap_failed)) {
        clean = false;
      }
    }
    if (clean) r.passing.insert(index);
  }
  return r;
}

Status ValidateResets(const json* resets) {
  if (resets == nullptr || resets->is_null()) return Status::Ok();
  if (!resets->is_array() || resets->size() > 64) {
    return FieldError("status.resets", "must be a list of at most 64 resets");
  }
  for (size_t i = 0; i < resets->size(); ++i) {
    Fields f((*resets)[i], Index("status.resets", i), false);
    int64_t gpu = 0;
    bool ok = false;
    int64_t at = 0;
    std::string message;
    TESSERA_RETURN_IF_ERROR(f.Int("gpu", &gpu, 0, 63, true));
    TESSERA_RETURN_IF_ERROR(Time(f, "time", &at, true));
    TESSERA_RETURN_IF_ERROR(f.Bool("ok", &ok));
    TESSERA_RETURN_IF_ERROR(f.String("message", &message));
    TESSERA_RETURN_IF_ERROR(f.Finish());
  }
  return Status::Ok();
}

}  // namespace tessera::api
