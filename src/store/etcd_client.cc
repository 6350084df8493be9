#include "store/etcd_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>

#include "src/store/etcd_rpc.grpc.pb.h"  // generated into the build tree
#include "store/proto_json.h"

namespace tessera::store {

using nlohmann::json;

namespace {

namespace pb = etcdserverpb;

// How long one call may take: etcd's own proposals time out sooner (5 s plus two elections).
constexpr auto kCallDeadline = std::chrono::seconds(15);

// etcd's refusal (a gRPC status) as Tessera's status.
Status EtcdError(grpc::StatusCode code, const std::string& message) {
  if (message.find("required revision has been compacted") != std::string::npos) {
    return FailedPrecondition("etcd: " + message);
  }
  if (message.find("required revision is a future revision") != std::string::npos) {
    return InvalidArgument("etcd: " + message);
  }
  if (message.find("too many operations in txn") != std::string::npos ||
      message.find("request is too large") != std::string::npos ||
      (code == grpc::StatusCode::RESOURCE_EXHAUSTED &&
       message.find("larger than max") != std::string::npos)) {
    return TooLarge("etcd: " + message);
  }
  if (message.find("database space exceeded") != std::string::npos) {
    return ResourceExhausted("etcd: " + message +
                             " (compact and defragment etcd, or raise "
                             "its --quota-backend-bytes)");
  }
  // No leader, no quorum, a timed-out proposal, a member that cannot be reached.
  if (code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return Unavailable("etcd: " + message);
  }
  return Internal("etcd (gRPC code " + std::to_string(static_cast<int>(code)) + "): " + message);
}

// Whether a member answered (etcd's own words start so), rather than could not be reached.
bool Answered(const grpc::Status& s) { return s.error_message().starts_with("etcdserver:"); }

// A request the client's callers wrote: one that etcd's messages cannot hold is Tessera's error.
Status RequestOf(const json& in, google::protobuf::Message* out) {
  const Status s = JsonToMessage(in, out);
  if (!s.ok()) return Internal("etcd: a request that is not etcd's: " + s.message());
  return s;
}

std::string ReadFile(const std::string& path, Status* error, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = FailedPrecondition(std::string("etcd: cannot read ") + flag + " " + path);
    return "";
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Stubs {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::KV::Stub> kv;
  std::unique_ptr<pb::Watch::Stub> watch;
  std::unique_ptr<pb::Lease::Stub> lease;
  std::unique_ptr<pb::Maintenance::Stub> maintenance;
};

}  // namespace

// One member's channel and stubs. gRPC 1.51's channel, once it failed to connect, can stay down
// for many seconds after the member is back (its pick_first policy waits for a re-resolution):
// a call that could not reach the member makes a new channel, which connects at its next call.
struct EtcdClient::Member {
  Member(std::string endpoint, std::shared_ptr<grpc::ChannelCredentials> credentials,
         grpc::ChannelArguments args)
      : endpoint_(std::move(endpoint)),
        credentials_(std::move(credentials)),
        args_(std::move(args)),
        stubs_(Make()) {}

  std::shared_ptr<Stubs> Get() {
    std::lock_guard<std::mutex> lock(mu_);
    return stubs_;
  }
  // After `failed` could not reach the member: a new channel (once, whoever saw it fail).
  void Renew(const std::shared_ptr<Stubs>& failed) {
    auto fresh = Make();
    std::lock_guard<std::mutex> lock(mu_);
    if (stubs_ == failed) stubs_ = std::move(fresh);
  }

 private:
  std::shared_ptr<Stubs> Make() const {
    auto s = std::make_shared<Stubs>();
    s->channel = grpc::CreateCustomChannel(endpoint_, credentials_, args_);
    s->kv = pb::KV::NewStub(s->channel);
    s->watch = pb::Watch::NewStub(s->channel);
    s->lease = pb::Lease::NewStub(s->channel);
    s->maintenance = pb::Maintenance::NewStub(s->channel);
    return s;
  }

  const std::string endpoint_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const grpc::ChannelArguments args_;
  std::mutex mu_;
  std::shared_ptr<Stubs> stubs_;
};

EtcdClient::EtcdClient(EtcdOptions options) : options_(std::move(options)) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options_.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options_.ca_file.empty()) {
      ssl.pem_root_certs = ReadFile(options_.ca_file, &setup_, "--etcd-ca-file");
    }
    if (!options_.cert_file.empty()) {
      ssl.pem_cert_chain = ReadFile(options_.cert_file, &setup_, "--etcd-cert-file");
      ssl.pem_private_key = ReadFile(options_.key_file, &setup_, "--etcd-key-file");
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  // Each channel its own connection: a new one is a new attempt (above), not the old one's.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // A page of a range may hold large objects: etcd limits what it is sent, not what it sends.
  args.SetMaxReceiveMessageSize(-1);
  args.SetUserAgentPrefix("tessera-server");
  for (const std::string& endpoint : options_.endpoints) {
    members_.push_back(std::make_unique<Member>(endpoint, credentials, args));
  }
}

EtcdClient::~EtcdClient() = default;

namespace {

// One unary call: the request from JSON, the answer to JSON.
template <typename Request, typename Response, typename Rpc>
Result<json> Unary(const json& request, Rpc rpc, grpc::Status* failed) {
  Request q;
  TESSERA_RETURN_IF_ERROR(RequestOf(request, &q));
  Response a;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  *failed = rpc(&ctx, q, &a);
  if (!failed->ok()) return EtcdError(failed->error_code(), failed->error_message());
  return MessageToJson(a);
}

Result<json> CallStubs(Stubs& m, std::string_view method, const json& request,
                       grpc::Status* failed) {
  using grpc::ClientContext;
  if (method == "kv/range") {
    return Unary<pb::RangeRequest, pb::RangeResponse>(
        request, [&](ClientContext* c, auto& q, auto* a) { return m.kv->Range(c, q, a); }, failed);
  }
  if (method == "kv/txn") {
    return Unary<pb::TxnRequest, pb::TxnResponse>(
        request, [&](ClientContext* c, auto& q, auto* a) { return m.kv->Txn(c, q, a); }, failed);
  }
  if (method == "kv/put") {
    return Unary<pb::PutRequest, pb::PutResponse>(
        request, [&](ClientContext* c, auto& q, auto* a) { return m.kv->Put(c, q, a); }, failed);
  }
  if (method == "kv/compaction") {
    return Unary<pb::CompactionRequest, pb::CompactionResponse>(
        request, [&](ClientContext* c, auto& q, auto* a) { return m.kv->Compact(c, q, a); },
        failed);
  }
  if (method == "lease/grant") {
    return Unary<pb::LeaseGrantRequest, pb::LeaseGrantResponse>(
        request, [&](ClientContext* c, auto& q, auto* a) { return m.lease->LeaseGrant(c, q, a); },
        failed);
  }
  if (method == "lease/revoke") {
    return Unary<pb::LeaseRevokeRequest, pb::LeaseRevokeResponse>(
        request, [&](ClientContext* c, auto& q, auto* a) { return m.lease->LeaseRevoke(c, q, a); },
        failed);
  }
  if (method == "maintenance/status") {
    return Unary<pb::StatusRequest, pb::StatusResponse>(
        request, [&](ClientContext* c, auto& q, auto* a) { return m.maintenance->Status(c, q, a); },
        failed);
  }
  if (method == "maintenance/alarm") {
    return Unary<pb::AlarmRequest, pb::AlarmResponse>(
        request, [&](ClientContext* c, auto& q, auto* a) { return m.maintenance->Alarm(c, q, a); },
        failed);
  }
  return InvalidArgument("etcd: no call " + std::string(method));
}

}  // namespace

Result<json> EtcdClient::CallOn(Member& member, std::string_view method, const json& request,
                                grpc::Status* failed) {
  using grpc::ClientContext;
  const std::shared_ptr<Stubs> stubs = member.Get();
  Result<json> r = CallStubs(*stubs, method, request, failed);
  if (!failed->ok() && failed->error_code() == grpc::StatusCode::UNAVAILABLE &&
      !Answered(*failed)) {
    member.Renew(stubs);
  }
  return r;
}

namespace {

Status StatusOf(const Status& s) { return s; }
Status StatusOf(const Result<json>& r) { return r.ok() ? Status::Ok() : r.status(); }

}  // namespace

template <typename R, typename Attempt>
R EtcdClient::OnMembers(Attempt attempt) {
  if (!setup_.ok()) return setup_;
  Status last = Unavailable("etcd: no member configured");
  Status refused;  // a member's own refusal (no leader) says more than one that is down
  const size_t n = members_.size();
  const size_t first = current_.load();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (first + k) % n;
    grpc::Status failed;
    bool answered = false;
    R r = attempt(*members_[i], &failed, &answered);
    const Status s = StatusOf(r);
    if (s.ok() || answered || s.code() != StatusCode::kUnavailable) {
      if (s.ok() || answered) current_.store(i);
      return r;
    }
    // Another member may be reachable, or have a leader (this one is cut off from the quorum).
    if (Answered(failed)) {
      if (refused.ok()) refused = s;
    } else {
      last = Unreachable(i, failed);
    }
  }
  return refused.ok() ? last : refused;
}

Result<json> EtcdClient::Call(std::string_view method, const json& request) {
  return OnMembers<Result<json>>(
      [&](Member& m, grpc::Status* failed, bool*) { return CallOn(m, method, request, failed); });
}

Status EtcdClient::RangeAll(std::string from, const std::string& end, int64_t* revision,
                            const std::function<Status(const json& kv)>& each) {
  constexpr int kPageSize = 1000;
  while (true) {
    json req = {{"key", Base64(from)}, {"range_end", Base64(end)}, {"limit", kPageSize}};
    if (*revision > 0) req["revision"] = std::to_string(*revision);
    auto r = Call("kv/range", req);
    if (!r.ok()) return r.status();
    if (*revision <= 0) *revision = EtcdInt((*r)["header"], "revision");
    const json& kvs = (*r).contains("kvs") ? (*r)["kvs"] : json::array();
    for (const json& kv : kvs) TESSERA_RETURN_IF_ERROR(each(kv));
    if (!(*r).value("more", false) || kvs.empty()) return Status::Ok();
    from = EtcdText(kvs.back(), "key") + std::string(1, '\0');
  }
}

Status EtcdClient::Unreachable(size_t i, const grpc::Status& failed) const {
  std::string message = "etcd member " + options_.endpoints[i] + ": " + failed.error_message();
  // A TLS handshake refused either way reads as a connection that failed.
  if (options_.tls) message += " (check --etcd-ca-file, --etcd-cert-file and --etcd-key-file)";
  return Unavailable(std::move(message));
}

void StreamCancel::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (action_) action_();
}

bool StreamCancel::cancelled() {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool StreamCancel::Attach(std::function<void()> cancel) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return false;
  action_ = std::move(cancel);
  return true;
}

void StreamCancel::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  action_ = nullptr;
}

Status EtcdClient::Watch(const json& create_request,
                         const std::function<bool(const json&)>& on_response,
                         StreamCancel* cancel) {
  return Stream("watch", {{"create_request", create_request}}, on_response, cancel);
}

namespace {

// One request on a bidirectional stream, then its answers to `on_response` until it returns
// false, the stream ends, or `cancel` is cancelled. `opened` says whether any answer came.
template <typename Request, typename Response, typename Open>
Status RunStream(const json& request, Open open, bool require_leader,
                 const std::function<bool(const json&)>& on_response, StreamCancel* cancel,
                 grpc::Status* failed) {
  Request q;
  TESSERA_RETURN_IF_ERROR(RequestOf(request, &q));
  grpc::ClientContext ctx;
  // A member cut off from the quorum ends the stream (etcd's clientv3 asks so for watches): the
  // caller goes on with another.
  if (require_leader) ctx.AddMetadata("hasleader", "true");
  if (cancel && !cancel->Attach([&ctx] { ctx.TryCancel(); })) return Status::Ok();
  struct Detach {
    StreamCancel* c;
    ~Detach() {
      if (c) c->Detach();
    }
  } detach{cancel};
  auto stream = open(&ctx);
  bool stopped = false;
  if (stream->Write(q)) {
    Response a;
    while (stream->Read(&a)) {
      if (!on_response(MessageToJson(a))) {
        stopped = true;
        break;
      }
    }
  }
  if (stopped) ctx.TryCancel();
  *failed = stream->Finish();
  if (stopped || (cancel && cancel->cancelled())) return Status::Ok();
  if (failed->ok()) return Unavailable("etcd: the stream ended");
  return EtcdError(failed->error_code(), failed->error_message());
}

}  // namespace

Status EtcdClient::Stream(std::string_view method, const json& request,
                          const std::function<bool(const json&)>& on_response,
                          StreamCancel* cancel) {
  if (method != "watch" && method != "lease/keepalive") {
    return InvalidArgument("etcd: no stream " + std::string(method));
  }
  return OnMembers<Status>([&](Member& member, grpc::Status* failed, bool* answered) {
    const std::shared_ptr<Stubs> stubs = member.Get();
    Stubs& m = *stubs;
    auto counted = [&](const json& r) {
      *answered = true;
      return on_response(r);
    };
    Status s;
    if (method == "watch") {
      s = RunStream<pb::WatchRequest, pb::WatchResponse>(
          request, [&](grpc::ClientContext* c) { return m.watch->Watch(c); }, true, counted, cancel,
          failed);
    } else {
      s = RunStream<pb::LeaseKeepAliveRequest, pb::LeaseKeepAliveResponse>(
          request, [&](grpc::ClientContext* c) { return m.lease->LeaseKeepAlive(c); }, false,
          counted, cancel, failed);
    }
    if (failed->error_code() == grpc::StatusCode::UNAVAILABLE && !Answered(*failed) && !*answered) {
      member.Renew(stubs);
    }
    return s;
  });
}

}  // namespace tessera::store
