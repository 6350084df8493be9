// Tessera's HTTP(S) client of the control plane's API (Boost.Beast): one request, a kept
// connection, a streamed body; and HttpApi, the agent's ApiClient over it. The CLI uses the
// same client (cli/client.h says where the server is).
#ifndef TESSERA_AGENT_HTTP_CLIENT_H_
#define TESSERA_AGENT_HTTP_CLIENT_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "agent/worker.h"
#include "core/status.h"

namespace tessera::agent {

struct Endpoint {
  std::string host = "127.0.0.1";
  std::string port = "8443";
  std::string token;
  bool tls = false;     // https://: the server's certificate is verified, host name included
  std::string ca_file;  // PEM bundle to verify it with; empty: the system's trust store
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

// The agent's ApiClient on an endpoint.
class HttpApi : public ApiClient {
 public:
  // With `kept`, calls go over one connection kept open, one at a time (the work loop's many
  // small calls); without, each call has a connection of its own (long polls beside others).
  explicit HttpApi(Endpoint ep, bool kept = false)
      : ep_(std::move(ep)), kept_(kept ? std::make_unique<Connection>(ep_) : nullptr) {}
  Result<Reply> Call(const std::string& method, const std::string& target, const std::string& body,
                     const std::string& content_type) override;
  Result<int> Stream(const std::string& target,
                     const std::function<void(std::string_view)>& on_data) override;

 private:
  Endpoint ep_;
  std::mutex mu_;
  const std::unique_ptr<Connection> kept_;
};

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_HTTP_CLIENT_H_
