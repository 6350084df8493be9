// The CLI's connection to the control plane: where the server is and which token to use (flags,
// then TESSERA_ADDR / TESSERA_TOKEN, then ~/.tessera/config), and plain HTTP requests to it.
#ifndef TESSERA_CLI_CLIENT_H_
#define TESSERA_CLI_CLIENT_H_

#include <string>

#include "core/status.h"

namespace tessera::cli {

struct Endpoint {
  std::string host = "127.0.0.1";
  std::string port = "8443";
  std::string token;
};

// Resolves the endpoint from `addr` / `token` (empty: not given), the environment and the
// config file (JSON or YAML with keys `server` and `token`). `addr` is HOST:PORT or
// http://HOST:PORT.
Result<Endpoint> ResolveEndpoint(const std::string& addr, const std::string& token);

struct Response {
  int status = 0;
  std::string body;
};

// One request; Unavailable-style errors (FailedPrecondition) when the server cannot be reached.
Result<Response> Request(const Endpoint& ep, const std::string& method, const std::string& target,
                         const std::string& body = "", const std::string& content_type = "");

}  // namespace tessera::cli

#endif  // TESSERA_CLI_CLIENT_H_
