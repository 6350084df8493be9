// HttpApi, the agent's ApiClient over Tessera's HTTP(S) client (net/http_client.h), whose names
// the agent uses as its own.
#ifndef TESSERA_AGENT_HTTP_CLIENT_H_
#define TESSERA_AGENT_HTTP_CLIENT_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "agent/worker.h"
#include "core/status.h"
#include "net/http_client.h"

namespace tessera::agent {

using net::Connection;
using net::Endpoint;
using net::Request;
using net::RequestStream;
using net::Response;

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
