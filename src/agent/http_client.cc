#include "agent/http_client.h"

namespace tessera::agent {

Result<ApiClient::Reply> HttpApi::Call(const std::string& method, const std::string& target,
                                       const std::string& body, const std::string& content_type) {
  Result<Response> r = Internal("not sent");
  if (kept_) {
    std::lock_guard<std::mutex> lock(mu_);
    r = kept_->Request(method, target, body, content_type);
  } else {
    r = Request(ep_, method, target, body, content_type);
  }
  if (!r.ok()) return r.status();
  return Reply{r->status, std::move(r->body)};
}

Result<int> HttpApi::Stream(const std::string& target,
                            const std::function<void(std::string_view)>& on_data) {
  std::string error_body;
  return RequestStream(ep_, target, on_data, &error_body);
}

}  // namespace tessera::agent
