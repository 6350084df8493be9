#include "api/gpu_checkup.h"

#include "api/fields.h"
#include "api/time.h"

namespace tessera::api {

using nlohmann::json;

namespace {

constexpr int64_t kCount = int64_t{1} << 40;  // counters: any sane value

Status OptionalInt(Fields& f, const char* key, std::optional<int64_t>* out) {
  if (f.Get(key) == nullptr) return Status::Ok();
  int64_t v = 0;
  TESSERA_RETURN_IF_ERROR(f.Int(key, &v, 0, kCount));
  *out = v;
  return Status::Ok();
}

Status DecodeOne(const json& obj, const std::string& path, GpuCheckupView* c) {
  Fields g(obj, path, false);
  TESSERA_RETURN_IF_ERROR(g.Int("index", &c->index, 0, 63, true));
  TESSERA_RETURN_IF_ERROR(g.String("vbios", &c->vbios));
  if (const json* p = g.Get("retiredPages")) {
    Fields f(*p, g.At("retiredPages"), false);
    TESSERA_RETURN_IF_ERROR(OptionalInt(f, "singleBit", &c->retired_sbe));
    TESSERA_RETURN_IF_ERROR(OptionalInt(f, "doubleBit", &c->retired_dbe));
    TESSERA_RETURN_IF_ERROR(f.Bool("pending", &c->retire_pending));
    TESSERA_RETURN_IF_ERROR(f.Finish());
  }
  if (const json* r = g.Get("remappedRows")) {
    Fields f(*r, g.At("remappedRows"), false);
    TESSERA_RETURN_IF_ERROR(OptionalInt(f, "correctable", &c->remapped_correctable));
    TESSERA_RETURN_IF_ERROR(OptionalInt(f, "uncorrectable", &c->remapped_uncorrectable));
    TESSERA_RETURN_IF_ERROR(f.Bool("pending", &c->remap_pending));
    TESSERA_RETURN_IF_ERROR(f.Bool("failed", &c->remap_failed));
    TESSERA_RETURN_IF_ERROR(f.Finish());
  }
  if (const json* p = g.Get("pcie")) {
    Fields f(*p, g.At("pcie"), false);
    TESSERA_RETURN_IF_ERROR(OptionalInt(f, "gen", &c->pcie_gen));
    TESSERA_RETURN_IF_ERROR(OptionalInt(f, "maxGen", &c->pcie_gen_max));
    TESSERA_RETURN_IF_ERROR(OptionalInt(f, "width", &c->pcie_width));
    TESSERA_RETURN_IF_ERROR(OptionalInt(f, "maxWidth", &c->pcie_width_max));
    TESSERA_RETURN_IF_ERROR(f.Finish());
  }
  TESSERA_RETURN_IF_ERROR(g.StringList("throttle", &c->throttle));
  if (const json* n = g.Get("nvlink")) {
    Fields f(*n, g.At("nvlink"), false);
    TESSERA_RETURN_IF_ERROR(f.Int("links", &c->nvlinks, 0, 64, true));
    TESSERA_RETURN_IF_ERROR(OptionalInt(f, "errors", &c->nvlink_errors));
    if (const json* down = f.Get("down")) {
      if (!down->is_array() || down->size() > 64) {
        return FieldError(f.At("down"), "must be a list of link numbers");
      }
      for (const json& l : *down) {
        if (!l.is_number_integer() || l.get<int64_t>() < 0 || l.get<int64_t>() > 63) {
          return FieldError(f.At("down"), "must be a list of link numbers");
        }
        c->nvlinks_down.push_back(l.get<int64_t>());
      }
    }
    TESSERA_RETURN_IF_ERROR(f.Finish());
  }
  return g.Finish();
}

}  // namespace

Result<std::vector<GpuCheckupView>> DecodeCheckups(const json* checkups) {
  std::vector<GpuCheckupView> out;
  if (checkups == nullptr || checkups->is_null()) return out;
  if (!checkups->is_array() || checkups->size() > 64) {
    return FieldError("status.checkups", "must be a list of at most 64 GPUs");
  }
  for (size_t i = 0; i < checkups->size(); ++i) {
    GpuCheckupView c;
    TESSERA_RETURN_IF_ERROR(DecodeOne((*checkups)[i], Index("status.checkups", i), &c));
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<XidSeen>> DecodeXids(const json* xids) {
  std::vector<XidSeen> out;
  if (xids == nullptr || xids->is_null()) return out;
  if (!xids->is_array() || xids->size() > 256) {
    return FieldError("status.xids", "must be a list of at most 256 entries");
  }
  for (size_t i = 0; i < xids->size(); ++i) {
    Fields x((*xids)[i], Index("status.xids", i), false);
    XidSeen s;
    TESSERA_RETURN_IF_ERROR(x.Int("gpu", &s.gpu, 0, 63, true));
    TESSERA_RETURN_IF_ERROR(x.Int("xid", &s.xid, 0, kCount, true));
    TESSERA_RETURN_IF_ERROR(x.String("time", &s.time, true));
    if (ParseTime(s.time) < 0) return FieldError(x.At("time"), "must be an RFC 3339 time");
    TESSERA_RETURN_IF_ERROR(x.Finish());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tessera::api
