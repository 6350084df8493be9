#include "net/http_client.h"

#include <sys/socket.h>

#include <array>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast.hpp>
#include <boost/beast/ssl.hpp>

namespace tessera::net {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {

// Runs `io` until the operation started on it completes, and throws its error. The stream's
// deadline (tcp_stream::expires_after) cancels it with beast::error::timeout: a server that
// stops answering ends the call instead of hanging it.
void Await(boost::asio::io_context& io, const beast::error_code& ec) {
  io.restart();
  io.run();
  if (ec) throw boost::system::system_error(ec);
}

// One request and its response on `stream` (whose deadline is set), on `io`; *keep_alive (when
// given) says whether the connection may carry the next one.
template <class Stream>
Response Exchange(Stream& stream, boost::asio::io_context& io, const Endpoint& ep,
                  const std::string& method, const std::string& target, const std::string& body,
                  const std::string& content_type, bool* keep_alive = nullptr) {
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  req.set(http::field::host, ep.host);
  req.set(http::field::user_agent, ep.user_agent);
  if (!ep.token.empty()) req.set(http::field::authorization, "Bearer " + ep.token);
  if (!content_type.empty()) req.set(http::field::content_type, content_type);
  req.body() = body;
  req.prepare_payload();
  beast::error_code ec;
  http::async_write(stream, req, [&](beast::error_code e, size_t) { ec = e; });
  Await(io, ec);
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(256 << 20);
  http::async_read(stream, buf, parser, [&](beast::error_code e, size_t) { ec = e; });
  Await(io, ec);
  Response r;
  r.status = parser.get().result_int();
  r.body = parser.get().body();
  if (keep_alive) *keep_alive = parser.get().keep_alive();
  return r;
}

namespace ssl = boost::asio::ssl;

// The TLS client context for `ep`: the server's certificate verified against its CA file, or
// the system's trust store.
std::unique_ptr<ssl::context> ClientContext(const Endpoint& ep) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  ctx->set_verify_mode(ssl::verify_peer);
  if (ep.ca_file.empty()) {
    ctx->set_default_verify_paths();
  } else {
    ctx->load_verify_file(ep.ca_file);
  }
  return ctx;
}

// A TLS stream over `tcp` (whose deadline is set), handshaken on `io`, with the host name
// verified.
std::unique_ptr<ssl::stream<beast::tcp_stream>> Handshake(beast::tcp_stream tcp,
                                                          boost::asio::io_context& io,
                                                          ssl::context& ctx, const Endpoint& ep) {
  auto stream = std::make_unique<ssl::stream<beast::tcp_stream>>(std::move(tcp), ctx);
  stream->set_verify_callback(ssl::host_name_verification(ep.host));
  if (!SSL_set_tlsext_host_name(stream->native_handle(), ep.host.c_str())) {
    throw boost::system::system_error(boost::asio::error::invalid_argument);
  }
  beast::error_code ec;
  stream->async_handshake(ssl::stream_base::client, [&](beast::error_code e) { ec = e; });
  Await(io, ec);
  return stream;
}

// Requests go out at once rather than wait on Nagle's algorithm for the acknowledgement of the
// previous write (a request's header and body are written separately).
void NoDelay(beast::tcp_stream& stream) {
  boost::system::error_code ignored;
  stream.socket().set_option(boost::asio::ip::tcp::no_delay(true), ignored);
}

// A connection to `*ep` or, when it cannot be reached, to the next of its replicas, from the
// one that answered last; `*ep`'s host and port become the one connected (its certificate is
// verified for that name). Throws the last failure when none can be reached.
beast::tcp_stream ConnectAny(boost::asio::io_context& io, Endpoint* ep) {
  std::vector<std::pair<std::string, std::string>> all = {{ep->host, ep->port}};
  for (const auto& r : ep->replicas) {
    if (r != all[0]) all.push_back(r);
  }
  const size_t first = ep->preferred ? ep->preferred->load() % all.size() : 0;
  boost::system::system_error last(boost::asio::error::host_not_found);
  for (size_t k = 0; k < all.size(); ++k) {
    const size_t i = (first + k) % all.size();
    try {
      boost::asio::ip::tcp::resolver resolver(io);
      beast::tcp_stream tcp(io);
      tcp.expires_after(all.size() > 1 ? std::chrono::seconds(5) : std::chrono::seconds(60));
      tcp.connect(resolver.resolve(all[i].first, all[i].second));
      tcp.expires_after(std::chrono::seconds(60));
      NoDelay(tcp);
      if (ep->preferred) ep->preferred->store(i);
      ep->host = all[i].first;
      ep->port = all[i].second;
      return tcp;
    } catch (const boost::system::system_error& e) {
      last = e;
    }
  }
  throw last;
}

}  // namespace

// Connects (with TLS when the endpoint says so) and runs `use` on the stream and its
// io_context.
template <class Use>
auto WithStream(const Endpoint& ep, Use use)
    -> decltype(use(std::declval<beast::tcp_stream&>(), std::declval<boost::asio::io_context&>())) {
  boost::asio::io_context io;
  Endpoint at = ep;
  beast::tcp_stream tcp = ConnectAny(io, &at);
  if (!ep.tls) return use(tcp, io);
  const std::unique_ptr<ssl::context> ctx = ClientContext(ep);
  const auto stream = Handshake(std::move(tcp), io, *ctx, at);
  return use(*stream, io);
}

Status Unreachable(const Endpoint& ep, const boost::system::system_error& e);

struct Connection::Impl {
  Endpoint ep;
  boost::asio::io_context io;
  std::unique_ptr<ssl::context> ctx;  // made once
  std::unique_ptr<beast::tcp_stream> tcp;
  std::unique_ptr<ssl::stream<beast::tcp_stream>> tls;

  bool open() const { return tcp || tls; }
  void Close() {
    tcp.reset();
    tls.reset();
  }
  void Open() {
    Endpoint at = ep;
    beast::tcp_stream stream = ConnectAny(io, &at);
    if (!ep.tls) {
      tcp = std::make_unique<beast::tcp_stream>(std::move(stream));
      return;
    }
    if (!ctx) ctx = ClientContext(ep);
    tls = Handshake(std::move(stream), io, *ctx, at);
  }
  Response Exchange(const std::string& method, const std::string& target, const std::string& body,
                    const std::string& content_type, bool* keep_alive) {
    if (tls) {
      beast::get_lowest_layer(*tls).expires_after(std::chrono::seconds(60));
      return net::Exchange(*tls, io, ep, method, target, body, content_type, keep_alive);
    }
    tcp->expires_after(std::chrono::seconds(60));
    return net::Exchange(*tcp, io, ep, method, target, body, content_type, keep_alive);
  }
};

Connection::Connection(Endpoint ep) : impl_(std::make_unique<Impl>()) { impl_->ep = std::move(ep); }

Connection::~Connection() = default;

Result<Response> Connection::Request(const std::string& method, const std::string& target,
                                     const std::string& body, const std::string& content_type) {
  try {
    for (int attempt = 0;; ++attempt) {
      const bool reused = impl_->open();
      if (!reused) impl_->Open();
      try {
        bool keep_alive = false;
        Response r = impl_->Exchange(method, target, body, content_type, &keep_alive);
        if (!keep_alive) impl_->Close();
        return r;
      } catch (const boost::system::system_error& e) {
        impl_->Close();
        // The server closed the kept connection while it was idle, before reading this
        // request (no response began): the request was not seen, and goes on a new one.
        const auto& c = e.code();
        const bool closed_idle = c == http::error::end_of_stream ||
                                 c == boost::asio::error::connection_reset ||
                                 c == boost::asio::error::broken_pipe ||
                                 c == boost::asio::error::eof || c == ssl::error::stream_truncated;
        if (reused && attempt == 0 && closed_idle) continue;
        throw;
      }
    }
  } catch (const boost::system::system_error& e) {
    return Unreachable(impl_->ep, e);
  }
}

Status Unreachable(const Endpoint& ep, const boost::system::system_error& e) {
  return FailedPrecondition("cannot reach the server at " + ep.host + ":" + ep.port + ": " +
                            e.code().message() +
                            (e.code().category() == boost::asio::error::get_ssl_category()
                                 ? " (TLS: check --ca-file / TESSERA_CA)"
                                 : ""));
}

Result<Response> Request(const Endpoint& ep, const std::string& method, const std::string& target,
                         const std::string& body, const std::string& content_type) {
  try {
    return WithStream(ep, [&](auto& stream, boost::asio::io_context& io) {
      return Exchange(stream, io, ep, method, target, body, content_type);
    });
  } catch (const boost::system::system_error& e) {
    return Unreachable(ep, e);
  }
}

Result<int> RequestStream(const Endpoint& ep, const std::string& target,
                          const std::function<void(std::string_view)>& on_data,
                          std::string* error_body) {
  return RequestStream(
      ep, "GET", target, "",
      [&](std::string_view piece) {
        on_data(piece);
        return true;
      },
      error_body);
}

Result<int> RequestStream(const Endpoint& ep, const std::string& method, const std::string& target,
                          const std::string& body,
                          const std::function<bool(std::string_view)>& on_data,
                          std::string* error_body) {
  try {
    return WithStream(ep, [&](auto& stream, boost::asio::io_context&) {
      beast::tcp_stream& tcp = beast::get_lowest_layer(stream);
      tcp.expires_never();
      http::request<http::string_body> req(http::string_to_verb(method), target, 11);
      req.set(http::field::host, ep.host);
      req.set(http::field::user_agent, ep.user_agent);
      if (!ep.token.empty()) req.set(http::field::authorization, "Bearer " + ep.token);
      if (!body.empty()) req.set(http::field::content_type, "application/json");
      req.body() = body;
      req.prepare_payload();
      http::write(stream, req);
      beast::flat_buffer buf;
      http::response_parser<http::buffer_body> parser;
      parser.body_limit(boost::none);
      http::read_header(stream, buf, parser);
      const int status = parser.get().result_int();
      std::array<char, 8192> chunk;
      while (!parser.is_done()) {
        parser.get().body().data = chunk.data();
        parser.get().body().size = chunk.size();
        beast::error_code ec;
        // What has come so far, not a full chunk: a watch's events are passed on as they come.
        http::read_some(stream, buf, parser, ec);
        if (ec && ec != http::error::need_buffer) break;
        const size_t n = chunk.size() - parser.get().body().size;
        if (status != 200) {
          error_body->append(chunk.data(), n);
        } else if (!on_data(std::string_view(chunk.data(), n))) {
          break;
        }
      }
      return status;
    });
  } catch (const boost::system::system_error& e) {
    return Unreachable(ep, e);
  }
}

}  // namespace tessera::net
