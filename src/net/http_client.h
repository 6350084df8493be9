// Tessera's HTTP(S) client (Boost.Beast): one request, a kept connection, a streamed body; TLS
// with the server verified and, when given, a client certificate. The agent and the CLI reach the
// control plane's API with it (agent/http_client.h, cli/client.h).
#ifndef TESSERA_NET_HTTP_CLIENT_H_
#define TESSERA_NET_HTTP_CLIENT_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace tessera::net {

struct Endpoint {
  std::string host = "127.0.0.1";
  std::string port = "8443";
  std::string token;
  bool tls = false;     // https://: the server's certificate is verified, host name included
  std::string ca_file;  // PEM bundle to verify it with; empty: the system's trust store
  std::string user_agent = "tessera-cli";
  // Other replicas of the same server (HOST, PORT), tried in turn when the one in use cannot be
  // reached: only a connection that failed, so nothing was sent, moves on. The replica that
  // answered last is tried first, by every copy of this Endpoint.
  std::vector<std::pair<std::string, std::string>> replicas;
  std::shared_ptr<std::atomic<size_t>> preferred = std::make_shared<std::atomic<size_t>>(0);
};

struct Response {
  int status = 0;
  std::string body;
};

// One request; Unavailable-style errors (FailedPrecondition) when the server cannot be reached.
Result<Response> Request(const Endpoint& ep, const std::string& method, const std::string& target,
                         const std::string& body = "", const std::string& content_type = "");

// A connection kept open from one request to the next (HTTP keep-alive), for one thread at a
// time: a client that makes many requests (the agent's work loop) pays for TCP and TLS once.
// A request that finds the kept connection closed by the server (idle too long) before any
// response began is sent again on a new one; a request the server may have seen is not.
class Connection {
 public:
  explicit Connection(Endpoint ep);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Result<Response> Request(const std::string& method, const std::string& target,
                           const std::string& body = "", const std::string& content_type = "");

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A GET whose body is streamed: `on_data` gets each piece as it arrives. Returns the status
// (and, when it is not 200, the body in *error_body).
Result<int> RequestStream(const Endpoint& ep, const std::string& target,
                          const std::function<void(std::string_view)>& on_data,
                          std::string* error_body);
// The same for any method with a body; the stream is read until it ends or `on_data` returns
// false; the connection is then closed.
Result<int> RequestStream(const Endpoint& ep, const std::string& method, const std::string& target,
                          const std::string& body,
                          const std::function<bool(std::string_view)>& on_data,
                          std::string* error_body);

}  // namespace tessera::net

#endif  // TESSERA_NET_HTTP_CLIENT_H_
