// A client of etcd's v3 API over gRPC (Debian's libgrpc++), with Tessera's own declarations of
// the messages it uses (store/etcd_rpc.proto). Callers write and read those messages as JSON in
// protobuf's JSON mapping, as etcd's JSON gateway speaks them: keys and values in base64, 64-bit
// integers as strings, fields at their default value left out. gRPC rather than the gateway: by
// turns on one member, etcd spends half the CPU per transaction and takes 1.4-1.9x the
// transactions per second (bench/etcd_client_choice.py, docs/BENCHMARKS.md).
//
// Several endpoints (the members of one etcd cluster), a channel each: a call goes to the one
// that answered last and, when it cannot be reached or has no leader, to the next. What etcd
// refuses comes back with its message: a compacted revision as FailedPrecondition, a revision in
// the future as InvalidArgument, no quorum or no member reachable as Unavailable.
#ifndef TESSERA_STORE_ETCD_CLIENT_H_
#define TESSERA_STORE_ETCD_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "store/etcd_wire.h"

namespace grpc {
class Status;
}

namespace tessera::store {

// Ends a stream being read on another thread: Cancel cancels its gRPC call, and the reading
// call returns. A cancel before the stream opens ends it as soon as it does.
class StreamCancel {
 public:
  void Cancel();
  bool cancelled();
  // The reading call's side, while the stream is open: what cancels it. False when cancelled
  // already.
  bool Attach(std::function<void()> cancel);
  void Detach();

 private:
  std::mutex mu_;
  std::function<void()> action_;
  bool cancelled_ = false;
};

class EtcdClient : public EtcdCaller {
 public:
  explicit EtcdClient(EtcdOptions options);
  ~EtcdClient() override;
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  const EtcdOptions& options() const { return options_; }

  // `method` ("kv/range", "kv/txn", "kv/put", "kv/compaction", "lease/grant", "lease/revoke",
  // "maintenance/status", "maintenance/alarm": the gateway's paths) with `request`; etcd's answer.
  Result<nlohmann::json> Call(std::string_view method, const nlohmann::json& request) override;

  // Every key in [from, end) in pages of 1,000, all read at one revision: `*revision` when it is
  // above 0, else the first page's (written back). `each` gets each key-value; an error it
  // returns ends the read.
  Status RangeAll(std::string from, const std::string& end, int64_t* revision,
                  const std::function<Status(const nlohmann::json& kv)>& each);

  // A watch (`create_request`, on a member with a leader): `on_response` gets each
  // WatchResponse until it returns false, the stream ends (Unavailable) or `cancel` is cancelled
  // (Ok).
  Status Watch(const nlohmann::json& create_request,
               const std::function<bool(const nlohmann::json&)>& on_response,
               StreamCancel* cancel = nullptr);
  // Either of etcd's streams ("watch", "lease/keepalive") with one request.
  Status Stream(std::string_view method, const nlohmann::json& request,
                const std::function<bool(const nlohmann::json&)>& on_response,
                StreamCancel* cancel = nullptr);

 private:
  struct Member;  // one member's channel and stubs
  Result<nlohmann::json> CallOn(Member& member, std::string_view method,
                                const nlohmann::json& request, grpc::Status* failed);
  // `attempt(member, &failed, &answered)` on each member from the one that answered last, until
  // one succeeds, answered (a stream's first message), or refused with more than Unavailable;
  // else a member's own refusal (no leader) over one that could not be reached.
  template <typename R, typename Attempt>
  R OnMembers(Attempt attempt);
  // Member `i` could not be reached.
  Status Unreachable(size_t i, const grpc::Status& failed) const;
  EtcdOptions options_;
  Status setup_;                    // a certificate that could not be read
  std::atomic<size_t> current_{0};  // the member that answered last
  std::vector<std::unique_ptr<Member>> members_;
};

}  // namespace tessera::store

#endif  // TESSERA_STORE_ETCD_CLIENT_H_
