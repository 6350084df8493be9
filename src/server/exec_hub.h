// Commands run inside running pods (`tessera exec`): the server's side of a session between a
// client and the agent of the pod's node, who never talk directly. The client opens a session
// and reads its output; the node's agent claims it (long poll), runs the command in the pod,
// and sends its output and how it ended. Sessions live in memory only: a server restart ends
// them, as kube-apiserver's restart ends `kubectl exec`. Thread-safe.
//
// A session ends for the agent (Append and Finish fail, and the agent stops the
// command) when its client stops reading or the server stops; a client whose session was
// never claimed, or whose agent went silent, is told so and its session dropped (Expire).
#ifndef TESSERA_SERVER_EXEC_HUB_H_
#define TESSERA_SERVER_EXEC_HUB_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace tessera::server {

struct ExecRequest {
  std::string ns, job, pod, node;
  std::vector<std::string> command;
  std::string owner;   // who may read it: the principal that opened it (role/namespace)
  bool stdin = false;  // the client sends the command's input (Input); else it reads none
};

// A piece of a session's output as sent: `stream` "stdout" or "stderr" with its bytes as they
// came, or (stream empty) how the command ended.
struct ExecFrame {
  std::string stream;
  std::string data;
  nlohmann::json end;
};

class ExecHub {
 public:
  struct Limits {
    size_t max_sessions = 256;            // open at once, over all nodes
    size_t max_per_owner = 32;            // open at once by one token
    size_t max_buffered = 4 << 20;        // output not yet read, per session
    int64_t claim_timeout_ms = 30'000;    // opened and not claimed by the node's agent
    int64_t silence_timeout_ms = 30'000;  // claimed, and nothing heard from the agent
  };
  ExecHub() : ExecHub(Limits()) {}
  explicit ExecHub(Limits limits) : limits_(limits) {}

  // A new session under `id` (unguessable: the caller draws it); ResourceExhausted when too
  // many are open, in all or by its owner (one tenant cannot take every session).
  Status Open(const std::string& id, ExecRequest request, int64_t now_ms);

  // The sessions opened for `node` and not yet claimed, now claimed by the caller: each
  // {"id", "namespace", "job", "pod", "command"}. Each is handed out once.
  nlohmann::json Claim(const std::string& node, int64_t now_ms);
  // Hands back sessions `ids` of `node` claimed but never delivered to its agent (the poll's
  // response had ended): they are open to the next claim again.
  void Unclaim(const std::vector<std::string>& ids, const std::string& node);
  // Registers `wake`, called once (no lock held) when a session is opened for `node`; nullopt
  // (nothing registered) when one is waiting already.
  std::optional<uint64_t> WaitForWork(const std::string& node, std::function<void()> wake);
  void StopWaiting(uint64_t waiter);

  // The agent of `node` adds output of `stream` ("stdout"/"stderr", may be empty: a sign of
  // life) or ends the session with `end` ({"exitCode"}|{"signal"}|{"error"}). NotFound for
  // an unknown session or another node's; FailedPrecondition (the caller stops the command) when
  // the client is gone; ResourceExhausted while the client has not read what was sent.
  Status Append(const std::string& id, const std::string& node, const std::string& stream,
                const std::string& data, int64_t now_ms);
  Status Finish(const std::string& id, const std::string& node, const nlohmann::json& end,
                int64_t now_ms);

  // The client's side: whether `owner` may read session `id`.
  Status CheckOwner(const std::string& id, const std::string& owner) const;
  // The frames not yet read, their bytes as sent; `*done` once the end was read, after which
  // the session is gone. nullopt when there is nothing new; then `wake` (if given) is called
  // once when there is.
  std::optional<std::vector<ExecFrame>> ReadFrames(const std::string& id, bool* done,
                                                   std::function<void()> wake);
  // ReadFrames as text: one JSON text per line, {"stdout"|"stderr": text} then the end (bytes
  // that are not UTF-8 replaced).
  std::optional<std::string> Read(const std::string& id, bool* done, std::function<void()> wake);

  // The client's input to a session opened with stdin (`eof`: there is no more). True while
  // there is room for more; false when the input not yet taken by the agent is at the limit,
  // and then `room` is called once when there is (the caller stops reading its client till
  // then). Input to a session that is gone or takes none is dropped.
  bool Input(const std::string& id, std::string_view data, bool eof, std::function<void()> room);
  // The agent of `node` takes the input not yet taken: the bytes, or "" with `*eof` once the
  // client said there is no more. nullopt when there is nothing yet; then `wake` is called
  // once when there is, or when the session ends. NotFound / FailedPrecondition as Append.
  Result<std::optional<std::string>> TakeInput(const std::string& id, const std::string& node,
                                               bool* eof, std::function<void()> wake);
  // The client left: the session ends (the agent is told at its next call).
  void Abandon(const std::string& id);

  // Ends the sessions whose agent never claimed them or went silent, telling their clients.
  void Expire(int64_t now_ms);

  size_t open_sessions() const;

 private:
  struct Session {
    ExecRequest request;
    bool claimed = false;
    int64_t heard_ms = 0;          // opened, claimed, or last heard from the agent
    std::deque<ExecFrame> frames;  // not yet read
    size_t frame_bytes = 0;
    bool ended = false;  // the end frame is in `frames`
    std::function<void()> reader;
    std::string input;  // from the client, not yet taken by the agent
    bool input_eof = false;
    std::function<void()> input_reader;  // the agent's long poll
    std::function<void()> input_room;    // the client, waiting for room
  };
  // The session `id` as `node`'s agent may write it: claimed by it and not ended (mu_ held).
  Result<Session*> AgentSession(const std::string& id, const std::string& node);
  // Appends a frame and takes the readers to wake (mu_ held): the client's, and the agent's
  // input poll when the session ends.
  std::function<void()> Push(Session& s, ExecFrame frame);

  const Limits limits_;
  mutable std::mutex mu_;
  std::map<std::string, Session> sessions_;
  // The waiters for `node`, removed, to be woken once mu_ is released.
  std::vector<std::function<void()>> TakeWaiters(const std::string& node);

  uint64_t next_waiter_ = 1;
  std::map<uint64_t, std::pair<std::string, std::function<void()>>> waiters_;  // node, wake
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_EXEC_HUB_H_
