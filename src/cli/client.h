// The CLI's connection to the control plane: where the server is and which token to use (flags,
// then TESSERA_ADDR / TESSERA_TOKEN, then ~/.tessera/config). The requests go through the
// HTTP(S) client it shares with the agent (agent/http_client.h).
#ifndef TESSERA_CLI_CLIENT_H_
#define TESSERA_CLI_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "agent/http_client.h"
#include "core/status.h"

namespace tessera::cli {

using agent::Connection;
using agent::Endpoint;
using agent::Request;
using agent::RequestStream;
using agent::Response;

// Resolves the endpoint from `addr` / `token` / `ca_file` (empty: not given), the environment
// (TESSERA_ADDR, TESSERA_TOKEN, TESSERA_CA) and the config file (YAML or JSON with keys
// `server`, `token`, `ca`). `addr` is HOST:PORT, http://HOST:PORT or https://HOST:PORT.
Result<Endpoint> ResolveEndpoint(const std::string& addr, const std::string& token,
                                 const std::string& ca_file = "");

}  // namespace tessera::cli

#endif  // TESSERA_CLI_CLIENT_H_
