// The writes of one scheduling cycle, committed together: object writes, each with the events
// about it, and events on their own. Flush commits them all in one transaction. Should that fail
// (an object changed meanwhile), each object write is committed alone with its events, so that a
// write that loses takes its events with it and the next cycle decides again; then the other
// events together.
#ifndef TESSERA_SERVER_CYCLE_WRITES_H_
#define TESSERA_SERVER_CYCLE_WRITES_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/control_plane.h"

namespace tessera::server {

// An object's metadata.name and metadata.namespace ("" when it has none).
std::string NameOf(const nlohmann::json& obj);
std::string NamespaceOf(const nlohmann::json& obj);

class CycleWrites {
 public:
  // An event about the object written.
  struct Note {
    const char* type;
    std::string reason;
    std::string message;
  };

  // Events are named "<object>.<now_ms>-<++event_seq>"; the revisions committed are added to
  // `written`. With `fence` (the leader's, on etcd), every write holds only while it does.
  CycleWrites(ControlPlane& plane, int64_t now_ms, int64_t& event_seq,
              std::vector<int64_t>& written, std::optional<store::Fence> fence = std::nullopt)
      : plane_(plane),
        now_ms_(now_ms),
        event_seq_(event_seq),
        written_(written),
        fence_(std::move(fence)) {}
  ~CycleWrites() { Flush(); }
  CycleWrites(const CycleWrites&) = delete;
  CycleWrites& operator=(const CycleWrites&) = delete;

  // Writes `obj` based on the version read, with an event about it when given (a concurrent
  // change wins: the next cycle decides again).
  void Put(const nlohmann::json& obj, std::optional<int64_t> version,
           std::optional<Note> note = std::nullopt);
  // The same with several events about it, written or dropped with it.
  void Put(const nlohmann::json& obj, std::optional<int64_t> version,
           const std::vector<Note>& notes);
  void Delete(const nlohmann::json& obj, int64_t version);
  void Event(const nlohmann::json& about, const Note& note);

  void Flush();

  // Writes committed (objects and events), and object writes refused for a conflict.
  int committed() const { return committed_; }
  int conflicts() const { return conflicts_; }
  // The leadership every write holds under (none off etcd).
  const std::optional<store::Fence>& fence() const { return fence_; }

 private:
  using Batch = std::vector<store::Write>;

  Result<std::vector<int64_t>> Commit(std::span<const store::Write> writes);
  store::Write MakeEvent(const nlohmann::json& about, const Note& note);

  ControlPlane& plane_;
  const int64_t now_ms_;
  int64_t& event_seq_;
  std::vector<int64_t>& written_;
  const std::optional<store::Fence> fence_;
  std::vector<Batch> objects_;
  std::vector<store::Write> events_;
  int committed_ = 0;
  int conflicts_ = 0;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_CYCLE_WRITES_H_
