#include "server/cycle_writes.h"

#include "api/json_read.h"
#include "api/object.h"
#include "api/time.h"
#include "server/json_names.h"

namespace tessera::server {

std::string NameOf(const json& obj) { return Str(Member(obj, "metadata"), "name"); }
std::string NamespaceOf(const json& obj) { return Str(Member(obj, "metadata"), "namespace"); }

void CycleWrites::Put(const json& obj, std::optional<int64_t> version, std::optional<Note> note) {
  const std::string kind = Str(obj, "kind");
  Batch& b = objects_.emplace_back();
  json body = obj;
  body["metadata"].erase("resourceVersion");
  b.push_back(
      {store::Write::Op::kPut, {kind, NamespaceOf(obj), NameOf(obj)}, body.dump(), version});
  if (note) b.push_back(MakeEvent(obj, *note));
}

void CycleWrites::Put(const json& obj, std::optional<int64_t> version,
                      const std::vector<Note>& notes) {
  Put(obj, version);
  for (const Note& n : notes) objects_.back().push_back(MakeEvent(obj, n));
}

void CycleWrites::Delete(const json& obj, int64_t version) {
  objects_.push_back({{store::Write::Op::kDelete,
                       {Str(obj, "kind"), NamespaceOf(obj), NameOf(obj)},
                       "",
                       version}});
}

void CycleWrites::Event(const json& about, const Note& note) {
  events_.push_back(MakeEvent(about, note));
}

void CycleWrites::Flush() {
  if (objects_.empty() && events_.empty()) return;
  std::vector<store::Write> all;
  for (const Batch& b : objects_) all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), events_.begin(), events_.end());
  if (Commit(all).ok()) {
    committed_ += static_cast<int>(all.size());
  } else {
    for (const Batch& b : objects_) {
      auto r = Commit(b);
      if (r.ok()) {
        committed_ += static_cast<int>(b.size());
      } else if (r.status().code() == StatusCode::kConflict) {
        ++conflicts_;
      }
    }
    if (!events_.empty() && Commit(events_).ok()) {
      committed_ += static_cast<int>(events_.size());
    } else {
      for (const store::Write& w : events_) {
        if (Commit(std::span<const store::Write>(&w, 1)).ok()) ++committed_;
      }
    }
  }
  objects_.clear();
  events_.clear();
}

Result<std::vector<int64_t>> CycleWrites::Commit(std::span<const store::Write> writes) {
  auto r = plane_.Commit(writes, fence_ ? &*fence_ : nullptr);
  if (r.ok()) written_.insert(written_.end(), r->begin(), r->end());
  return r;
}

store::Write CycleWrites::MakeEvent(const json& about, const Note& note) {
  const std::string name = NameOf(about).substr(0, 200) + "." + std::to_string(now_ms_) + "-" +
                           std::to_string(++event_seq_);
  const std::string ns = NamespaceOf(about).empty() ? "tessera-system" : NamespaceOf(about);
  const json e = api::EventObject(ns, name, note.type, note.reason, note.message,
                                  api::FormatTime(now_ms_), Str(about, "kind"), NameOf(about));
  return {store::Write::Op::kPut, {"Event", ns, name}, e.dump(), 0};
}

}  // namespace tessera::server
