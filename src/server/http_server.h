// A small asynchronous HTTP/1.1 server on Boost.Beast: it reads requests (with a body limit),
// hands each to a handler, and writes the handler's response, keeping connections alive. Each
// client (fairness.h) holds only its share of connections, watches and requests in flight.
// A few threads run the I/O and the handlers, each connection on a strand of its own, so a
// long request (a large apply) holds one thread and delays neither the other connections nor
// /healthz. The handler must be safe to call from several threads at once. Connections are capped
// below the process's descriptor limit: at the cap, the connection idle the longest (waiting for
// its next request) is closed to admit a new one, and a new one is refused only when none is idle.
#ifndef TESSERA_SERVER_HTTP_SERVER_H_
#define TESSERA_SERVER_HTTP_SERVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "server/fairness.h"

namespace tessera::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query, percent-decoded
  std::map<std::string, std::string> query;
  // Every `command` of the query in order (pods/exec repeats it, one per argument).
  std::vector<std::string> commands;
  std::string authorization;  // the Authorization header, verbatim
  std::string content_type;
  std::string accept;  // the Accept header, verbatim
  std::string user_agent;
  // Whether it sends an Impersonate-* header (kubectl --as, --as-group): refused, not ignored.
  bool impersonates = false;
  // A WebSocket upgrade (Upgrade: websocket): its Sec-WebSocket-Key and the subprotocols it
  // offers (Sec-WebSocket-Protocol); both empty otherwise.
  std::string websocket_key;
  std::string websocket_protocols;
  std::string body;
};

// A response body produced over time (a watch), sent with chunked transfer encoding. After
// the headers, and after each chunk is written, the server calls Next; the stream calls `emit`
// exactly once per Next, from any thread: with the next chunk, or with nullopt to end.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  virtual void Next(std::function<void(std::optional<std::string>)> emit) = 0;
  // The client left, the stream timed out or the server stops: a pending Next may be dropped.
  virtual void Cancel() = 0;
  // Over a WebSocket: a data message from the client. True when the stream takes more at
  // once; false when it cannot yet, and then it calls `resume` once when it can (the server
  // reads nothing more from the client until then). By default messages are ignored.
  virtual bool Receive(std::string_view message, std::function<void()> resume) {
    (void)message;
    (void)resume;
    return true;
  }
  // A chunk emitted after the response ended (it timed out, or the client left): it never
  // reached the client. A stream that hands out work takes the work back here; by default the
  // chunk is dropped.
  virtual void Undelivered(std::string chunk) { (void)chunk; }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Extra header fields, in order (e.g. Kubernetes' "Warning: 299 - \"...\"").
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is this stream (status and content type still apply), ended after
  // `stream_seconds` at the latest; the connection closes after it.
  std::shared_ptr<ResponseStream> stream;
  int stream_seconds = 1800;
  // With a stream, to a WebSocket upgrade request: the subprotocol chosen. The server answers
  // 101 Switching Protocols and sends each chunk as one binary message, then a close frame; it
  // answers the client's pings and ends when the client closes.
  std::string websocket_protocol;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port
  size_t max_body_bytes = 4 << 20;
  // PEM files; both set: HTTPS (TLS 1.2 or later) only.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Handlers run on these; with client limits, tenants together take all but two.
  int threads = 8;
  // 0: the descriptor limit (its soft limit raised to the hard one at start) less
  // kReservedDescriptors for the store, logs and the agents' files.
  size_t max_connections = 0;
  // Who sent a request (a cheap lookup of its token), for the limits per client (fairness.h):
  // connections, watches and requests in flight; 429 with Retry-After beyond them. At the
  // connection cap, when no connection is idle, the newest connection of the tenant holding the
  // most is closed to admit a new one. Unset: no client is limited.
  std::function<ClientId(const HttpRequest&)> identify;
  ClientLimits limits;
};

constexpr size_t kReservedDescriptors = 128;

// Raises the soft RLIMIT_NOFILE to the hard limit where allowed; returns the soft limit now.
size_t RaiseDescriptorLimit();

class HttpServer {
 public:
  // Binds, listens and starts serving on a thread of its own.
  static Result<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                   HttpHandler handler);
  ~HttpServer();  // stops

  uint16_t port() const;
  size_t max_connections() const;
  // Stops accepting, closes connections and joins the I/O thread. Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A Kubernetes-style Status object: {"kind":"Status",...,"reason":R,"message":M,"code":C}.
std::string StatusJson(int code, std::string_view reason, std::string_view message);

// Splits "a=1&b=x%20y" into decoded pairs (the last of a repeated name); false on a malformed
// escape. With `commands`, every value of "command", in order, is added to it too.
bool ParseQuery(std::string_view query, std::map<std::string, std::string>* out,
                std::vector<std::string>* commands = nullptr);
// Decodes %XX escapes (and '+' as a space only when `plus_is_space`); false when malformed.
bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_HTTP_SERVER_H_
