// The CLI's connection to the control plane: where the server is and which token to use (flags,
// then TESSERA_ADDR / TESSERA_TOKEN, then ~/.tessera/config), and plain HTTP requests to it.
#ifndef TESSERA_CLI_CLIENT_H_
#define TESSERA_CLI_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera::cli {

struct Endpoint {
  std::string host = "127.0.0.1";
  std::string port = "8443";
  std::string token;
  bool tls = false;     // https://: the server's certificate is verified, host name included
  std::string ca_file;  // PEM bundle to verify it with; empty: the system's trust store
};

// Resolves the endpoint from `addr` / `token` / `ca_file` (empty: not given), the environment
// (TESSERA_ADDR, TESSERA_TOKEN, TESSERA_CA) and the config file (YAML or JSON with keys
// `server`, `token`, `ca`). `addr` is HOST:PORT, http://HOST:PORT or https://HOST:PORT.
Result<Endpoint> ResolveEndpoint(const std::string& addr, const std::string& token,
                                 const std::string& ca_file = "");

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

}  // namespace tessera::cli

#endif  // TESSERA_CLI_CLIENT_H_
