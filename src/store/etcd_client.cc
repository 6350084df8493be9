#include "store/etcd_client.h"

#include <openssl/evp.h>

#include <algorithm>
#include <utility>

namespace tessera::store {

using nlohmann::json;

Result<EtcdOptions> ParseEtcdUrl(std::string_view url) {
  EtcdOptions o;
  if (url.starts_with("etcd://")) {
    url.remove_prefix(7);
  } else if (url.starts_with("etcds://")) {
    url.remove_prefix(8);
    o.tls = true;
  } else {
    return InvalidArgument("store: \"" + std::string(url) +
                           "\" is not etcd://host:port[,host:port...][/prefix] (or etcds://)");
  }
  const size_t slash = url.find('/');
  std::string_view hosts = url.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view path = url.substr(slash);
    while (path.ends_with('/')) path.remove_suffix(1);
    if (!path.empty()) o.prefix = std::string(path) + "/";
  }
  while (!hosts.empty()) {
    const size_t comma = hosts.find(',');
    const std::string_view host = hosts.substr(0, comma);
    const size_t colon = host.rfind(':');
    if (host.empty() || colon == std::string_view::npos || colon == 0 || colon + 1 == host.size() ||
        !std::all_of(host.begin() + colon + 1, host.end(),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      return InvalidArgument("store: \"" + std::string(host) + "\" is not host:port");
    }
    o.endpoints.emplace_back(host);
    hosts.remove_prefix(comma == std::string_view::npos ? hosts.size() : comma + 1);
  }
  if (o.endpoints.empty()) return InvalidArgument("store: etcd:// names no member");
  return o;
}

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(n);
  return out;
}

Result<std::string> Unbase64(std::string_view text) {
  if (text.size() % 4 != 0) return Internal("etcd: a value is not base64");
  std::string out(3 * (text.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return Internal("etcd: a value is not base64");
  // EVP_DecodeBlock counts the padding's bytes as decoded zeros.
  size_t len = static_cast<size_t>(n);
  if (text.ends_with("==")) {
    len -= 2;
  } else if (text.ends_with('=')) {
    len -= 1;
  }
  out.resize(len);
  return out;
}

json EtcdModIs(const std::string& key, int64_t revision) {
  return {{"key", Base64(key)},
          {"target", "MOD"},
          {"result", "EQUAL"},
          {"mod_revision", std::to_string(revision)}};
}
json EtcdPut(const std::string& key, const std::string& value) {
  return {{"request_put", {{"key", Base64(key)}, {"value", Base64(value)}}}};
}
json EtcdDelete(const std::string& key) {
  return {{"request_delete_range", {{"key", Base64(key)}}}};
}

std::string EtcdText(const json& kv, const char* field) {
  if (!kv.is_object() || !kv.contains(field) || !kv[field].is_string()) return "";
  auto bytes = Unbase64(kv[field].get_ref<const std::string&>());
  return bytes.ok() ? std::move(bytes).value() : std::string();
}

int64_t EtcdInt(const json& message, const char* field) {
  if (!message.is_object()) return 0;
  auto it = message.find(field);
  if (it == message.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    if (!s.empty() && s.size() <= 19 && std::all_of(s.begin(), s.end(), ::isdigit)) {
      return std::stoll(s);
    }
  }
  return 0;
}

std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      ++prefix.back();
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // every key
}

namespace {

// etcd's refusal (a gRPC status as JSON: code, message) as Tessera's status.
Status EtcdError(int http_status, const std::string& body) {
  json e = json::parse(body, nullptr, false);
  // {"error": "...", "code": 14, "message": "..."}, or a stream's {"error": {"grpc_code": 14,
  // "message": "..."}}.
  if (e.is_object() && e.contains("error") && e["error"].is_object()) e = e["error"];
  auto text = [&](const char* field) {
    return e.is_object() && e.contains(field) && e[field].is_string() ? e[field].get<std::string>()
                                                                      : std::string();
  };
  std::string message = text("message");
  if (message.empty()) message = text("error");
  if (message.empty()) message = body;
  int code = static_cast<int>(EtcdInt(e, "code"));
  if (code == 0) code = static_cast<int>(EtcdInt(e, "grpc_code"));
  if (message.find("required revision has been compacted") != std::string::npos) {
    return FailedPrecondition("etcd: " + message);
  }
  if (message.find("required revision is a future revision") != std::string::npos) {
    return InvalidArgument("etcd: " + message);
  }
  if (message.find("too many operations in txn") != std::string::npos ||
      message.find("request is too large") != std::string::npos) {
    return TooLarge("etcd: " + message);
  }
  if (message.find("database space exceeded") != std::string::npos) {
    return ResourceExhausted("etcd: " + message +
                             " (compact and defragment etcd, or raise "
                             "its --quota-backend-bytes)");
  }
  // 14 UNAVAILABLE, 4 DEADLINE_EXCEEDED: no leader, no quorum, a timed-out proposal.
  if (code == 14 || code == 4 || http_status == 503) return Unavailable("etcd: " + message);
  return Internal("etcd (HTTP " + std::to_string(http_status) + "): " + message);
}

}  // namespace

struct EtcdClient::Pool {
  std::mutex mu;
  std::vector<std::unique_ptr<net::Connection>> idle;
};

EtcdClient::EtcdClient(EtcdOptions options) : options_(std::move(options)) {
  for (size_t i = 0; i < options_.endpoints.size(); ++i) pools_.push_back(std::make_unique<Pool>());
}

EtcdClient::~EtcdClient() = default;

net::Endpoint EtcdClient::EndpointAt(size_t i) const {
  const std::string& hp = options_.endpoints[i];
  const size_t colon = hp.rfind(':');
  net::Endpoint ep;
  ep.host = hp.substr(0, colon);
  ep.port = hp.substr(colon + 1);
  ep.tls = options_.tls;
  ep.ca_file = options_.ca_file;
  ep.cert_file = options_.cert_file;
  ep.key_file = options_.key_file;
  ep.user_agent = "tessera-server";
  ep.tls_hint = "check --etcd-ca-file, --etcd-cert-file and --etcd-key-file";
  return ep;
}

Result<json> EtcdClient::Call(std::string_view method, const json& request) {
  const std::string body = request.dump();
  const std::string target = "/v3/" + std::string(method);
  Status last = Unavailable("etcd: no member configured");
  Status answered;  // a member's own refusal (no leader) says more than one that is down
  const size_t n = options_.endpoints.size();
  const size_t first = current_.load();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (first + k) % n;
    Pool& pool = *pools_[i];
    std::unique_ptr<net::Connection> conn;
    {
      std::lock_guard<std::mutex> lock(pool.mu);
      if (!pool.idle.empty()) {
        conn = std::move(pool.idle.back());
        pool.idle.pop_back();
      }
    }
    if (!conn) conn = std::make_unique<net::Connection>(EndpointAt(i));
    Result<net::Response> r = conn->Request("POST", target, body, "application/json");
    if (!r.ok()) {
      last = Unavailable("etcd member " + options_.endpoints[i] + ": " + r.status().message());
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(pool.mu);
      pool.idle.push_back(std::move(conn));
    }
    if (r->status != 200) {
      Status s = EtcdError(r->status, r->body);
      // Another member may have a leader (this one is cut off from the quorum).
      if (s.code() == StatusCode::kUnavailable) {
        if (answered.ok()) answered = s;
        continue;
      }
      return s;
    }
    current_.store(i);
    json out = json::parse(r->body, nullptr, false);
    if (out.is_discarded()) return Internal("etcd: an answer that is not JSON");
    return out;
  }
  return answered.ok() ? last : answered;
}

Status EtcdClient::Watch(const json& create_request,
                         const std::function<bool(const json&)>& on_response,
                         net::StreamCancel* cancel) {
  return Stream("watch", {{"create_request", create_request}}, on_response, cancel);
}

Status EtcdClient::Stream(std::string_view method, const json& request,
                          const std::function<bool(const json&)>& on_response,
                          net::StreamCancel* cancel) {
  const std::string body = request.dump();
  const std::string target = "/v3/" + std::string(method);
  const size_t n = options_.endpoints.size();
  Status last = Unavailable("etcd: no member configured");
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (current_.load() + k) % n;
    std::string pending, error_body;
    Status failed = Status::Ok();
    bool stopped = false;
    auto status = net::RequestStream(
        EndpointAt(i), "POST", target, body,
        [&](std::string_view piece) {
          pending.append(piece);
          for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
            const std::string line = pending.substr(0, nl);
            pending.erase(0, nl + 1);
            if (line.empty()) continue;
            const json message = json::parse(line, nullptr, false);
            if (!message.is_object()) {
              failed = Internal("etcd: a watch message that is not JSON");
              return false;
            }
            if (message.contains("error")) {
              const json& e = message["error"];
              failed = EtcdError(e.value("http_code", 500), e.dump());
              return false;
            }
            if (!on_response(message.value("result", json::object()))) {
              stopped = true;
              return false;
            }
          }
          return true;
        },
        &error_body, cancel);
    if (status.ok() && *status == 0) return Status::Ok();  // cancelled before it opened
    if (!status.ok()) {
      last = Unavailable("etcd member " + options_.endpoints[i] + ": " + status.status().message());
      continue;
    }
    if (*status != 200) return EtcdError(*status, error_body);
    if (!failed.ok()) return failed;
    current_.store(i);
    return stopped ? Status::Ok() : Unavailable("etcd: the stream ended");
  }
  return last;
}

}  // namespace tessera::store
