#include "server/http_server.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdio>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "api/json_text.h"
#include "server/websocket.h"

namespace tessera::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Response bodies from this size on hand their memory back once sent (ReturnFreeMemory).
constexpr size_t kLargeBody = 1 << 20;

// Returns the allocator's free memory to the system (glibc's malloc_trim), one thread at a time
// (another large response meanwhile trims after it): the server's lists are built from many
// small allocations on whichever thread served them, which glibc keeps in that thread's arena
// otherwise.
void ReturnFreeMemory() {
  static std::atomic<bool> busy = false;
  if (busy.exchange(true)) return;
  malloc_trim(0);
  busy = false;
}

}  // namespace

std::string StatusJson(int code, std::string_view reason, std::string_view message) {
  // With metadata and details, as kube-apiserver writes every Status (kubectl debug reads
  // details of a 404 and crashed without it).
  return api::DumpJson(nlohmann::json{{"kind", "Status"},
                                      {"apiVersion", "v1"},
                                      {"metadata", nlohmann::json::object()},
                                      {"details", nlohmann::json::object()},
                                      {"status", "Failure"},
                                      {"reason", api::SafeText(reason, 64)},
                                      {"message", api::SafeText(message, 4096)},
                                      {"code", code}});
}

namespace {

using TlsStream = asio::ssl::stream<beast::tcp_stream>;
using Clock = std::chrono::steady_clock;

// What the connection cap sees of a connection. The state is read by the acceptor while the
// connection's own strand changes it, hence atomics; Evict is posted to that strand.
class Connection {
 public:
  virtual ~Connection() = default;
  // Closes the connection (it was idle the longest when a new one needed its place).
  virtual void Evict() = 0;
  bool idle() const { return idle_.load(std::memory_order_relaxed); }
  // The client whose requests the connection carries (none before its first request is
  // identified); read by the connection cap, set on the connection's strand.
  std::optional<ClientId> client() const {
    std::lock_guard<std::mutex> lock(client_mu_);
    return client_;
  }
  // Since its last reply was sent (or it was accepted): what the client saw last.
  int64_t idle_since() const { return idle_since_.load(std::memory_order_relaxed); }

 protected:
  void SetIdle(bool idle) { idle_.store(idle, std::memory_order_relaxed); }
  void SetClient(std::optional<ClientId> c) {
    std::lock_guard<std::mutex> lock(client_mu_);
    client_ = std::move(c);
  }
  // Stamped as a reply is handed to the socket, not when the write completes: a client that
  // has its answer may send on another connection before this one's completion runs.
  void StampActivity() {
    idle_since_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }

 private:
  std::atomic<bool> idle_{true};  // waiting for (the rest of) its next request
  std::atomic<int64_t> idle_since_{Clock::now().time_since_epoch().count()};
  mutable std::mutex client_mu_;
  std::optional<ClientId> client_;
};

// What a session needs of the server to hold its client to the limits: the book and the hook
// that names the client. Shared, so that a session outliving the server's members is safe.
struct Fairness {
  Fairness(std::function<ClientId(const HttpRequest&)> id, ClientLimits limits)
      : identify(std::move(id)), book(limits) {}
  std::function<ClientId(const HttpRequest&)> identify;
  FairnessBook book;
};

// One connection over `Stream` (beast::tcp_stream, or TlsStream), on a strand of its own:
// read a request, answer it, repeat while the client keeps it alive.
template <class Stream>
class Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Stream stream, const HttpHandler& handler, size_t max_body,
          std::shared_ptr<Fairness> fairness)
      : stream_(std::move(stream)),
        handler_(handler),
        max_body_(max_body),
        fairness_(std::move(fairness)) {}

  ~Session() override {
    if (fairness_ && client_) fairness_->book.Give(FairnessBook::What::kConnection, *client_);
  }

  // The connection's strand.
  asio::any_io_executor executor() { return Lowest().get_executor(); }

  void Evict() override {
    asio::post(Lowest().get_executor(), [self = this->shared_from_this()] { self->Shut(); });
  }

  void Start() {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      Lowest().expires_after(std::chrono::seconds(30));
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->Close();
                                self->Read();
                              });
    } else {
      Read();
    }
  }

 private:
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void Read() {
    SetIdle(true);
    parser_.emplace();
    parser_->body_limit(max_body_);
    parser_->header_limit(64 * 1024);
    Lowest().expires_after(std::chrono::seconds(60));
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    SetIdle(false);
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset) {
      Close();
      return;
    }
    if (ec == http::error::body_limit) {
      Reply(413, "application/json",
            StatusJson(413, "RequestEntityTooLarge",
                       "request body exceeds " + std::to_string(max_body_) + " bytes"),
            false);
      return;
    }
    if (ec) {
      Reply(400, "application/json",
            StatusJson(400, "BadRequest", "malformed HTTP request: " + ec.message()), false);
      return;
    }
    http::request<http::string_body> req = parser_->release();
    HttpRequest r;
    r.method = std::string(req.method_string().data(), req.method_string().size());
    const std::string_view target(req.target().data(), req.target().size());
    const size_t q = target.find('?');
    const bool path_ok = PercentDecode(target.substr(0, q), false, &r.path);
    const bool query_ok =
        q == std::string_view::npos || ParseQuery(target.substr(q + 1), &r.query, &r.commands);
    if (!path_ok || !query_ok) {
      Reply(400, "application/json",
            StatusJson(400, "BadRequest", "malformed percent-escape in the request target"),
            req.keep_alive());
      return;
    }
    if (!api::ValidUtf8(r.path)) {
      Reply(400, "application/json",
            StatusJson(400, "BadRequest", "the request path is not UTF-8 once decoded"),
            req.keep_alive());
      return;
    }
    for (const auto& [k, v] : r.query) {
      if (!api::ValidUtf8(k) || !api::ValidUtf8(v)) {
        Reply(400, "application/json",
              StatusJson(400, "BadRequest",
                         "query parameter " + api::SafeText(k, 64) + ": not UTF-8 once decoded"),
              req.keep_alive());
        return;
      }
    }
    r.authorization =
        std::string(req[http::field::authorization].data(), req[http::field::authorization].size());
    r.content_type =
        std::string(req[http::field::content_type].data(), req[http::field::content_type].size());
    r.accept = std::string(req[http::field::accept].data(), req[http::field::accept].size());
    r.user_agent =
        std::string(req[http::field::user_agent].data(), req[http::field::user_agent].size());
    if (beast::iequals(req[http::field::upgrade], "websocket")) {
      const auto key = req[http::field::sec_websocket_key];
      const auto protocols = req[http::field::sec_websocket_protocol];
      r.websocket_key = std::string(key.data(), key.size());
      r.websocket_protocols = std::string(protocols.data(), protocols.size());
    }
    for (const auto& field : req) {
      const beast::string_view name = field.name_string();
      r.impersonates = r.impersonates ||
                       (name.size() >= 12 && beast::iequals(name.substr(0, 12), "impersonate-"));
    }
    r.body = std::move(req.body());
    if (!fairness_) {
      // On this connection's strand, on one of the server's threads: a long handler holds that
      // thread only.
      HttpResponse out = Call(r);
      if (out.stream) return StartStream(std::move(out), r.websocket_key);
      Reply(out.status, out.content_type, std::move(out.body), req.keep_alive(), out.headers);
      return;
    }
    using What = FairnessBook::What;
    FairnessBook& book = fairness_->book;
    const ClientId who = fairness_->identify(r);
    // The connection is counted as its client's from the client's first request on it.
    if (!client_ || client_->key != who.key || client_->level != who.level) {
      if (!book.Take(What::kConnection, who)) return TooMany(What::kConnection, who, false);
      if (client_) book.Give(What::kConnection, *client_);
      client_ = who;
      SetClient(who);
    }
    if (!book.Take(What::kRequest, who)) return TooMany(What::kRequest, who, req.keep_alive());
    HttpResponse out = Call(r);
    book.Give(What::kRequest, who);
    if (out.stream) {
      if (!book.Take(What::kWatch, who)) {
        // Closed: a client refused a watch comes back after Retry-After on a new connection.
        out.stream->Cancel();
        return TooMany(What::kWatch, who, false);
      }
      watching_ = true;
      return StartStream(std::move(out), r.websocket_key);
    }
    Reply(out.status, out.content_type, std::move(out.body), req.keep_alive(), out.headers);
  }

  // 429 with Retry-After, as Kubernetes' API Priority and Fairness answers.
  void TooMany(FairnessBook::What what, const ClientId& who, bool keep_alive) {
    const int after = fairness_->book.limits().retry_after_seconds;
    Reply(429, "application/json",
          StatusJson(429, "TooManyRequests", fairness_->book.Refusal(what, who)), keep_alive,
          {{"Retry-After", std::to_string(after)}});
  }

  HttpResponse Call(const HttpRequest& r) {
    try {
      return handler_(r);
    } catch (const std::exception& e) {
      // A defect, not the client's input: the request fails, the server goes on.
      std::fprintf(stderr, "error: %s %s: %s\n", r.method.c_str(), api::SafeText(r.path).c_str(),
                   api::SafeText(e.what()).c_str());
      HttpResponse out;
      out.status = 500;
      out.body = StatusJson(500, "InternalError", "internal error handling the request");
      return out;
    }
  }

  // Streams a response body: headers, then chunks as the stream emits them, until it ends,
  // times out or the client goes away.
  void StartStream(HttpResponse out, const std::string& websocket_key) {
    if (!out.websocket_protocol.empty()) return StartWebSocket(std::move(out), websocket_key);
    Lowest().expires_never();
    body_stream_ = out.stream;
    timer_.emplace(Lowest().get_executor());
    timer_->expires_after(std::chrono::seconds(out.stream_seconds));
    timer_->async_wait([self = this->shared_from_this()](beast::error_code ec) {
      if (!ec) self->EndStream();
    });
    // A read that completes only when the client closes (or misbehaves).
    stream_.async_read_some(asio::buffer(probe_),
                            [self = this->shared_from_this()](beast::error_code, size_t) {
                              self->streaming_ = false;
                              self->StopStream();
                            });
    streaming_ = true;
    auto head = std::make_shared<std::string>(
        "HTTP/1.1 " + std::to_string(out.status) + " " +
        std::string(http::obsolete_reason(static_cast<http::status>(out.status))) +
        "\r\nServer: tessera\r\nContent-Type: " + out.content_type +
        "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    asio::async_write(stream_, asio::buffer(*head),
                      [self = this->shared_from_this(), head](beast::error_code ec, size_t) {
                        if (ec) return self->StopStream();
                        self->PullChunk();
                      });
  }

  // A stream over a WebSocket: 101, then each chunk a binary message; the client's frames are
  // read meanwhile (pings answered, a close or a broken frame ends it).
  void StartWebSocket(HttpResponse out, const std::string& key) {
    Lowest().expires_never();
    body_stream_ = out.stream;
    websocket_ = true;
    timer_.emplace(Lowest().get_executor());
    timer_->expires_after(std::chrono::seconds(out.stream_seconds));
    timer_->async_wait([self = this->shared_from_this()](beast::error_code ec) {
      if (!ec) self->EndStream();
    });
    streaming_ = true;
    ReadFrames();
    Send(
        "HTTP/1.1 101 Switching Protocols\r\nServer: tessera\r\nUpgrade: websocket\r\n"
        "Connection: Upgrade\r\nSec-WebSocket-Accept: " +
            websocket::AcceptKey(key) + "\r\nSec-WebSocket-Protocol: " + out.websocket_protocol +
            "\r\n\r\n",
        /*then_pull=*/true);
  }

  void ReadFrames() {
    stream_.async_read_some(asio::buffer(frame_buf_),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) {
                                self->streaming_ = false;
                                return self->StopStream();
                              }
                              self->frames_in_.append(self->frame_buf_.data(), n);
                              self->TakeFrames();
                            });
  }

  // Handles the client's frames received: pings answered, a close or a broken frame ends the
  // stream, data (stdin, a terminal's size) goes to the stream, which may ask to wait; then
  // reads on.
  void TakeFrames() {
    bool bad = false;
    while (auto f = websocket::TakeFrame(&frames_in_, 1 << 20, &bad)) {
      if (f->op == websocket::Opcode::kPing) {
        Send(websocket::Frame(websocket::Opcode::kPong, f->payload), false);
      } else if (f->op == websocket::Opcode::kClose) {
        streaming_ = false;
        return StopStream();
      } else if ((f->op == websocket::Opcode::kBinary || f->op == websocket::Opcode::kText) &&
                 body_stream_) {
        std::weak_ptr<Session> weak = this->shared_from_this();
        const bool more = body_stream_->Receive(f->payload, [weak] {
          if (auto self = weak.lock()) {
            asio::post(self->Lowest().get_executor(), [self] {
              if (self->streaming_) self->TakeFrames();
            });
          }
        });
        if (!more) return;  // resumed by the stream
      }
    }
    if (bad || frames_in_.size() > (2 << 20)) {
      streaming_ = false;
      return StopStream();
    }
    ReadFrames();
  }

  // Writes `data` after what is queued; a data write (`then_pull`) pulls the next chunk once
  // written.
  void Send(std::string data, bool then_pull) {
    out_queue_.emplace_back(std::move(data), then_pull);
    if (!sending_) SendNext();
  }

  void SendNext() {
    if (out_queue_.empty()) {
      sending_ = false;
      return;
    }
    sending_ = true;
    auto item = std::make_shared<std::pair<std::string, bool>>(std::move(out_queue_.front()));
    out_queue_.pop_front();
    asio::async_write(stream_, asio::buffer(item->first),
                      [self = this->shared_from_this(), item](beast::error_code ec, size_t) {
                        if (ec) return self->StopStream();
                        if (item->second) {
                          if (self->closing_) return self->StopStream();
                          self->PullChunk();
                        }
                        self->SendNext();
                      });
  }

  void PullChunk() {
    if (!streaming_) return StopStream();
    // Emitted from any thread: hop onto this connection's executor, if the connection (and so
    // the server's I/O context) still exists.
    std::weak_ptr<Session> weak = this->shared_from_this();
    std::weak_ptr<ResponseStream> from = body_stream_;
    body_stream_->Next([weak, from](std::optional<std::string> chunk) {
      auto stream = from.lock();
      auto self = weak.lock();
      if (!self) {
        if (stream && chunk) stream->Undelivered(std::move(*chunk));
        return;
      }
      asio::post(self->Lowest().get_executor(),
                 [self, stream = std::move(stream), chunk = std::move(chunk)]() mutable {
                   self->WriteChunk(std::move(chunk), stream.get());
                 });
    });
  }

  // `from`: the stream that emitted it (null when it is gone), told when it arrives too late.
  void WriteChunk(std::optional<std::string> chunk, ResponseStream* from) {
    if (!streaming_) {
      if (from != nullptr && chunk) from->Undelivered(std::move(*chunk));
      return StopStream();
    }
    if (!chunk) return EndStream();
    if (chunk->empty()) return PullChunk();
    if (websocket_) return Send(websocket::Frame(websocket::Opcode::kBinary, *chunk), true);
    std::ostringstream hex;
    hex << std::hex << chunk->size();
    auto data = std::make_shared<std::string>(hex.str() + "\r\n" + *chunk + "\r\n");
    asio::async_write(stream_, asio::buffer(*data),
                      [self = this->shared_from_this(), data](beast::error_code ec, size_t) {
                        if (ec) return self->StopStream();
                        self->PullChunk();
                      });
  }

  // Ends the body properly, then closes.
  void EndStream() {
    if (!streaming_) return StopStream();
    if (websocket_) {
      // A normal close, then the connection ends once it is written.
      closing_ = true;
      return Send(websocket::CloseFrame(1000), true);
    }
    streaming_ = false;
    auto last = std::make_shared<std::string>("0\r\n\r\n");
    asio::async_write(
        stream_, asio::buffer(*last),
        [self = this->shared_from_this(), last](beast::error_code, size_t) { self->StopStream(); });
  }

  void StopStream() {
    streaming_ = false;
    if (watching_) {
      watching_ = false;
      fairness_->book.Give(FairnessBook::What::kWatch, *client_);
    }
    if (body_stream_) body_stream_->Cancel();
    body_stream_.reset();
    if (timer_) timer_->cancel();
    Shut();
  }

  // Ends the connection both ways at once.
  void Shut() {
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    Lowest().socket().close(ec);
  }

  void Reply(int status, std::string_view content_type, std::string body, bool keep_alive,
             const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    auto res =
        std::make_shared<http::response<http::string_body>>(static_cast<http::status>(status), 11);
    res->set(http::field::server, "tessera");
    res->set(http::field::content_type, std::string(content_type));
    for (const auto& [name, value] : headers) res->insert(name, value);
    res->keep_alive(keep_alive);
    res->body() = std::move(body);
    res->prepare_payload();
    StampActivity();
    const bool large = res->body().size() >= kLargeBody;
    http::async_write(
        stream_, *res,
        [self = this->shared_from_this(), res, keep_alive, large](beast::error_code ec, size_t) {
          if (large) {
            // A large body (a list of every Job) was built from many small allocations, freed
            // now: hand the memory back to the system rather than keep it in the allocator's
            // arenas for good.
            res->body().clear();
            res->body().shrink_to_fit();
            ReturnFreeMemory();
          }
          if (ec || !keep_alive) {
            self->Close();
            return;
          }
          self->Read();
        });
  }

  void Close() {
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  Stream stream_;
  const HttpHandler& handler_;
  size_t max_body_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<ResponseStream> body_stream_;
  std::optional<asio::steady_timer> timer_;
  std::array<char, 1> probe_{};
  bool streaming_ = false;
  // A WebSocket stream: the client's bytes not yet parsed, and what waits to be written.
  bool websocket_ = false;
  bool closing_ = false;
  bool sending_ = false;
  std::array<char, 4096> frame_buf_{};
  std::string frames_in_;
  std::deque<std::pair<std::string, bool>> out_queue_;
  std::shared_ptr<Fairness> fairness_;  // null: no client is limited
  std::optional<ClientId> client_;      // counted in fairness_ for this connection
  bool watching_ = false;               // a watch of client_'s is counted
};

}  // namespace

struct HttpServer::Impl {
  explicit Impl(int threads) : io(threads) {}
  asio::io_context io;
  tcp::acceptor acceptor{io};
  HttpHandler handler;
  size_t max_body = 0;
  size_t max_connections = 0;
  std::optional<asio::ssl::context> tls;
  std::shared_ptr<Fairness> fairness;
  std::vector<std::thread> threads;
  bool stopped = false;
  std::mutex mu;
  std::vector<std::weak_ptr<Connection>> connections;  // guarded by mu

  // Makes room for one more connection: false when every connection is busy.
  bool Admit() {
    std::lock_guard<std::mutex> lock(mu);
    std::erase_if(connections, [](const std::weak_ptr<Connection>& c) { return c.expired(); });
    if (connections.size() < max_connections) return true;
    size_t oldest = connections.size();
    int64_t since = 0;
    for (size_t i = 0; i < connections.size(); ++i) {
      auto c = connections[i].lock();
      if (c && c->idle() && (oldest == connections.size() || c->idle_since() < since)) {
        oldest = i;
        since = c->idle_since();
      }
    }
    if (oldest == connections.size()) oldest = Hog();
    if (oldest == connections.size()) return false;
    if (auto c = connections[oldest].lock()) c->Evict();
    connections.erase(connections.begin() + static_cast<ptrdiff_t>(oldest));
    return true;
  }

  // With every connection busy: the newest connection of the tenant (or the unauthenticated
  // clients) holding the most, so that one client's watches cannot keep out the admin, the
  // agents and the other tenants. connections.size() when there is none. Called under mu.
  size_t Hog() {
    if (!fairness) return connections.size();
    std::map<std::string, std::pair<size_t, size_t>> held;  // client -> (count, newest index)
    for (size_t i = 0; i < connections.size(); ++i) {
      auto c = connections[i].lock();
      std::optional<ClientId> who = c ? c->client() : std::nullopt;
      if (!who || who->level == ClientId::Level::kExempt || who->level == ClientId::Level::kAgent) {
        continue;
      }
      auto& [count, newest] = held[who->key];
      ++count;
      newest = i;
    }
    size_t best = connections.size(), most = 0;
    for (const auto& [key, h] : held) {
      if (h.first > most) {
        most = h.first;
        best = h.second;
      }
    }
    return best;
  }

  template <class S>
  void Serve(std::shared_ptr<S> session) {
    {
      std::lock_guard<std::mutex> lock(mu);
      connections.push_back(session);
    }
    // Started on its own strand.
    asio::dispatch(session->executor(), [session] { session->Start(); });
  }

  void Accept() {
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        // Small writes (a watch's events, a reply's last bytes) go out at once: with Nagle's
        // algorithm one waits for the peer's delayed acknowledgement, 40 ms on Linux.
        beast::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
      }
      if (!ec && !Admit()) {
        // Every connection is busy: this one is refused rather than starve them.
        beast::error_code ignored;
        socket.close(ignored);
      } else if (!ec && tls) {
        Serve(std::make_shared<Session<TlsStream>>(TlsStream(std::move(socket), *tls), handler,
                                                   max_body, fairness));
      } else if (!ec) {
        Serve(std::make_shared<Session<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)),
                                                           handler, max_body, fairness));
      }
      Accept();
    });
  }
};

size_t RaiseDescriptorLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = std::min<rlim_t>(lim.rlim_max, rlim_t{1} << 20);
    if (raised.rlim_cur > lim.rlim_cur && setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return lim.rlim_cur == RLIM_INFINITY ? size_t{1} << 20 : static_cast<size_t>(lim.rlim_cur);
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                      HttpHandler handler) {
  const int threads = std::max(1, options.threads);
  auto impl = std::make_unique<Impl>(threads);
  impl->handler = std::move(handler);
  impl->max_body = options.max_body_bytes;
  impl->max_connections = options.max_connections;
  if (options.identify) {
    ClientLimits limits = options.limits;
    // Two threads stay free for the admin and the agents.
    if (limits.tenant_requests == 0) {
      limits.tenant_requests = static_cast<size_t>(std::max(1, threads - 2));
    }
    impl->fairness = std::make_shared<Fairness>(options.identify, limits);
  }
  if (impl->max_connections == 0) {
    const size_t limit = RaiseDescriptorLimit();
    impl->max_connections =
        limit > 2 * kReservedDescriptors ? limit - kReservedDescriptors : limit / 2;
  }
  beast::error_code ec;
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
      return InvalidArgument("TLS needs both a certificate and a key file");
    }
    impl->tls.emplace(asio::ssl::context::tls_server);
    impl->tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                           asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                           asio::ssl::context::no_tlsv1_1);
    impl->tls->use_certificate_chain_file(options.tls_cert_file, ec);
    if (ec)
      return InvalidArgument("TLS certificate " + options.tls_cert_file + ": " + ec.message());
    impl->tls->use_private_key_file(options.tls_key_file, asio::ssl::context::pem, ec);
    if (ec) return InvalidArgument("TLS key " + options.tls_key_file + ": " + ec.message());
  }
  const asio::ip::address addr = asio::ip::make_address(options.host, ec);
  if (ec) return InvalidArgument("listen address " + options.host + ": " + ec.message());
  const tcp::endpoint endpoint(addr, options.port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return FailedPrecondition("cannot listen on " + options.host + ":" +
                              std::to_string(options.port) + ": " + ec.message());
  }
  impl->Accept();
  Impl* raw = impl.get();
  for (int i = 0; i < threads; ++i) impl->threads.emplace_back([raw] { raw->io.run(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

uint16_t HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

size_t HttpServer::max_connections() const { return impl_->max_connections; }

void HttpServer::Stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  asio::post(impl_->io, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
  impl_->io.stop();  // handlers under way finish; their replies are dropped
  for (std::thread& t : impl_->threads) t.join();
}

bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out->push_back(plus_is_space && c == '+' ? ' ' : c);
    }
  }
  return true;
}

bool ParseQuery(std::string_view query, std::map<std::string, std::string>* out,
                std::vector<std::string>* commands) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string key, value;
    if (!PercentDecode(pair.substr(0, eq), true, &key)) return false;
    if (eq != std::string_view::npos && !PercentDecode(pair.substr(eq + 1), true, &value)) {
      return false;
    }
    if (commands != nullptr && key == "command") commands->push_back(value);
    (*out)[key] = value;
  }
  return true;
}

}  // namespace tessera::server
