#include "cli/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "server/http_server.h"

namespace tessera::cli {
namespace {

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
  Endpoint ep;
  ep.host = "127.0.0.1";
  ep.port = std::to_string(http->port());
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

}  // namespace
}  // namespace tessera::cli
