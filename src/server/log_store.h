// Job logs shipped by the node agents: one file per pod under <data-dir>/logs/<ns>/<job>/<uid>/
// (a log belongs to one Job: one deleted and created again under its name starts anew),
// capped (the oldest half goes to <pod>.log.1 when a file outgrows the cap), read by tail or
// followed as lines arrive. A pod's container may run more than once (restarted by its
// restartPolicy, a retried attempt, placed again): each run's start is kept in
// <pod>.log.starts, so a read shows the current run, or the previous one (kubectl logs
// --previous), and a follow ends when its run does. Thread-safe.
#ifndef TESSERA_SERVER_LOG_STORE_H_
#define TESSERA_SERVER_LOG_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::server {

class LogStore {
 public:
  LogStore(std::string dir, int64_t max_bytes_per_pod = 4 << 20)
      : dir_(std::move(dir)), max_bytes_(max_bytes_per_pod) {}

  // Appends to a pod's log, received at `at_ms` (ms since the epoch; 0: unknown), which the
  // lines that start in `data` take as their time. Names must be DNS labels (namespace, pod)
  // or subdomains (job).
  // A non-empty `start` (a token unique to one run of the container, so a retried Append
  // marks it once) says that `data` is the first output of a new run.
  Status Append(std::string_view ns, std::string_view job, std::string_view uid,
                std::string_view pod, std::string_view data, int64_t at_ms = 0,
                std::string_view start = "");

  // The pods that have logs, by name.
  std::vector<std::string> Pods(std::string_view ns, std::string_view job,
                                std::string_view uid) const;

  // A position in a pod's log that survives rotation: the rotation count and the byte offset.
  // and which run of the container it is in (the count of runs started after the first).
  struct Position {
    int64_t generation = 0;
    int64_t offset = 0;
    int64_t run = 0;
  };
  // Which runs a read covers: all the log, the current run (what Kubernetes shows), or the
  // one before it (--previous). A previous run wholly rotated away is not found.
  enum class Runs { kAll, kCurrent, kPrevious };

  // What to read of a pod's log, as Kubernetes' PodLogOptions: lines received at or after
  // `since_ms` (-1: all), then the last `tail_lines` of them (-1: all), each prefixed with its
  // time ("2026-11-28T04:55:00.123Z ") with `timestamps`, and at most `limit_bytes` (-1: all).
  // A line's time is when the server received the piece of output it starts in: its agent
  // ships output about once a second.
  struct ReadOptions {
    int64_t since_ms = -1;
    int64_t tail_lines = -1;
    bool timestamps = false;
    int64_t limit_bytes = -1;
    Runs runs = Runs::kAll;
  };
  // The current file read so, and the position at its end (to follow from). NotFound when
  // `runs` is kPrevious and the container has not run before.
  Result<std::string> Read(std::string_view ns, std::string_view job, std::string_view uid,
                           std::string_view pod, const ReadOptions& options, Position* end) const;

  // What was appended since `*from` (from the start of the current file after a rotation) in
  // the run `*from` is in; advances `*from`. Sets `*over` when that run is over (a later one
  // started) and all of it was read.
  Result<std::string> Since(std::string_view ns, std::string_view job, std::string_view uid,
                            std::string_view pod, Position* from, bool* over = nullptr) const;

  // Registers `wake` to be called once, by the appending thread with no lock held, when the
  // pod's log grows past `from`, a later run starts, or the log ends. Never calls `wake` itself:
  // when the log already has grown or ended, registers nothing and returns nullopt (the caller
  // reads again). Otherwise an id for Unsubscribe.
  std::optional<uint64_t> Subscribe(std::string_view ns, std::string_view job, std::string_view uid,
                                    std::string_view pod, Position from,
                                    std::function<void()> wake);
  void Unsubscribe(uint64_t id);

  // The pod has ended: its log is whole (its agent ships the output before it reports the
  // end). Followers are woken and end once they have read it all (Ended). A later Append (the
  // pod started again) opens it again. Held in memory: after a restart the pod's phase tells.
  void End(std::string_view ns, std::string_view job, std::string_view uid, std::string_view pod);
  bool Ended(std::string_view ns, std::string_view job, std::string_view uid,
             std::string_view pod) const;

 private:
  struct Waiter {
    std::string key;
    Position from;
    std::function<void()> wake;
  };
  Status CheckNames(std::string_view ns, std::string_view job, std::string_view uid,
                    std::string_view pod) const;
  std::string PathOf(std::string_view ns, std::string_view job, std::string_view uid,
                     std::string_view pod) const;
  static std::string Key(std::string_view ns, std::string_view job, std::string_view uid,
                         std::string_view pod);
  // A run's start: where in which generation of the file its output begins.
  struct Start {
    int64_t generation = 0;
    int64_t offset = 0;
  };
  // The runs' starts of one pod's log: those after the first run's, in order, and the tokens
  // of all (a retried Append marks its run once).
  struct Starts {
    std::vector<Start> later;
    std::set<std::string> tokens;
  };
  // mu_ held; read from <log>.starts once.
  Starts& StartsOf(const std::string& key, const std::string& path) const;
  bool Grown(const std::string& key, const std::string& path, const Position& from) const;
  // The byte range [*lo, *hi) of the current file (generation `generation`, `size` bytes) that
  // `runs` covers, with `*run` the run the range's end is in (mu_ held).
  Status RangeOf(const std::string& key, const std::string& path, Runs runs, int64_t generation,
                 int64_t size, int64_t* lo, int64_t* hi, int64_t* run) const;

  const std::string dir_;
  const int64_t max_bytes_;
  mutable std::mutex mu_;
  std::map<std::string, Position> ends_;          // per pod: where its log ends now
  std::set<std::string> ended_;                   // the pods whose log is whole
  mutable std::map<std::string, Starts> starts_;  // per pod, see StartsOf
  uint64_t next_id_ = 1;
  std::map<uint64_t, Waiter> waiting_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_LOG_STORE_H_
