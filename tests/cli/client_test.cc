#include "cli/client.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/http_server.h"

namespace tessera::cli {
namespace {

// Plain HTTP to `server` on the loopback address.
Endpoint EndpointOf(const server::HttpServer& server) {
  Endpoint ep;
  ep.host = "127.0.0.1";
  ep.port = std::to_string(server.port());
  return ep;
}

// A kept connection carries request after request, and one the server closed while it was idle
// (here: evicted for a newer one at the server's cap of one connection) is made again without
// the caller seeing it.
TEST(Connection, KeepsItsConnectionAndMakesItAgainWhenTheServerClosedIt) {
  std::atomic<int> served = 0;
  server::HttpServerOptions options;
  options.max_connections = 1;
  auto http = server::HttpServer::Start(options, [&](const server::HttpRequest& r) {
                ++served;
                server::HttpResponse out;
                out.status = 200;
                out.content_type = "text/plain";
                out.body = r.method + " " + r.path + " " + r.body;
                return out;
              }).value();
  const Endpoint ep = EndpointOf(*http);
  Connection kept(ep);
  for (int i = 0; i < 3; ++i) {
    auto r = kept.Request("POST", "/a", "x" + std::to_string(i), "text/plain");
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "POST /a x" + std::to_string(i));
  }
  // Another client takes the only place: the kept connection is closed by the server. (The
  // server evicts an idle connection only: each step first lets the last answer's connection
  // go back to waiting.)
  const auto settle = [] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); };
  settle();
  auto other = Request(ep, "GET", "/b");
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_EQ(other->body, "GET /b ");
  settle();
  auto again = kept.Request("GET", "/c");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->body, "GET /c ");
  EXPECT_EQ(served, 5) << "every request served once";

  // With the server gone: an error naming it, not a crash or a hang.
  http.reset();
  auto gone = kept.Request("GET", "/d");
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find("cannot reach the server"), std::string::npos);
}

// This process's connected TCP sockets whose local (`local` true) or remote port is `port`, each
// with whether TCP_NODELAY is set on it.
std::vector<bool> NoDelayOfSockets(uint16_t port, bool local) {
  std::vector<bool> out;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    const int fd = std::atoi(e->d_name);
    if (fd <= 2 || fd == dirfd(dir)) continue;
    sockaddr_in addr{};
    socklen_t len = sizeof(addr);
    const int got = local ? getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                          : getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    if (got != 0 || addr.sin_family != AF_INET || ntohs(addr.sin_port) != port) continue;
    int listening = 0, nodelay = 0;
    socklen_t n = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &n) != 0 || listening) continue;
    n = sizeof(int);
    if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &n) != 0) continue;
    out.push_back(nodelay != 0);
  }
  closedir(dir);
  return out;
}

// Both ends of a connection send small writes at once (TCP_NODELAY): with Nagle's algorithm a
// watch's event written while an earlier one is unacknowledged waits for the peer's delayed
// acknowledgement (40 ms on Linux), and so does a request's body after its header.
TEST(Connection, BothEndsSendSmallWritesWithoutWaiting) {
  // "/s" streams two chunks, then ends.
  struct TwoChunks : server::ResponseStream {
    int sent = 0;
    void Next(std::function<void(std::optional<std::string>)> emit) override {
      emit(++sent <= 2 ? std::optional<std::string>("chunk\n") : std::nullopt);
    }
    void Cancel() override {}
  };
  auto http = server::HttpServer::Start({}, [](const server::HttpRequest& r) {
                server::HttpResponse out;
                out.content_type = "text/plain";
                out.body = "ok";
                if (r.path == "/s") out.stream = std::make_shared<TwoChunks>();
                return out;
              }).value();
  const Endpoint ep = EndpointOf(*http);
  Connection kept(ep);
  ASSERT_TRUE(kept.Request("GET", "/a").ok());
  // The kept connection stays open: one socket at each end.
  const std::vector<bool> client = NoDelayOfSockets(http->port(), false);
  const std::vector<bool> server = NoDelayOfSockets(http->port(), true);
  ASSERT_EQ(client.size(), 1u);
  ASSERT_EQ(server.size(), 1u);
  EXPECT_TRUE(client[0]) << "the client's socket";
  EXPECT_TRUE(server[0]) << "the server's socket";
  // A streamed request's socket too.
  std::vector<bool> streaming;
  std::string error;
  auto streamed = RequestStream(
      ep, "/s", [&](std::string_view) { streaming = NoDelayOfSockets(http->port(), false); },
      &error);
  ASSERT_TRUE(streamed.ok()) << streamed.status().message();
  EXPECT_EQ(*streamed, 200);
  ASSERT_EQ(streaming.size(), 2u);  // the kept connection's and the stream's
  EXPECT_TRUE(streaming[0] && streaming[1]);
}

}  // namespace
}  // namespace tessera::cli
