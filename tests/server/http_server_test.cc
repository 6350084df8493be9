// The HTTP server's resource bounds: handlers off the I/O thread, and the connection cap that
// closes the connection idle the longest to admit a new one.
#include "server/http_server.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace tessera::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions o) {
    auto srv = HttpServer::Start(o, [this](const HttpRequest& r) {
      HttpResponse out;
      out.content_type = "text/plain";
      if (r.path == "/slow") {
        slow_started_.set_value();
        release_.get_future().wait();
      }
      out.body = "answer to " + r.path;
      return out;
    });
    ASSERT_TRUE(srv.ok()) << srv.status().message();
    server_ = std::move(srv).value();
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  std::unique_ptr<tcp::socket> Connect() {
    auto s = std::make_unique<tcp::socket>(io_);
    s->connect({asio::ip::make_address("127.0.0.1"), server_->port()});
    return s;
  }
  static void Send(tcp::socket& s, const std::string& target) {
    http::request<http::string_body> req(http::verb::get, target, 11);
    req.set(http::field::host, "127.0.0.1");
    http::write(s, req);
  }
  // The body of the response on `s`, or the error that ended the connection instead.
  static std::string Receive(tcp::socket& s) {
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    beast::error_code ec;
    http::read(s, buf, res, ec);
    return ec ? "error: " + ec.message() : res.body();
  }
  std::string Get(const std::string& target) {
    auto s = Connect();
    Send(*s, target);
    return Receive(*s);
  }

  asio::io_context io_;
  std::unique_ptr<HttpServer> server_;
  std::promise<void> slow_started_, release_;
};

TEST_F(HttpServerTest, ALongRequestDelaysNeitherHealthNorOtherRequests) {
  Start({});
  auto slow = Connect();
  Send(*slow, "/slow");
  slow_started_.get_future().wait();
  // The slow handler holds one handler thread; the I/O thread and the others still answer.
  EXPECT_EQ(Get("/healthz"), "answer to /healthz");
  EXPECT_EQ(Get("/apis/tessera.io/v1/jobs"), "answer to /apis/tessera.io/v1/jobs");
  release_.set_value();
  EXPECT_EQ(Receive(*slow), "answer to /slow");
}

TEST_F(HttpServerTest, AtTheCapTheConnectionIdleTheLongestMakesRoom) {
  HttpServerOptions o;
  o.max_connections = 3;
  Start(o);
  EXPECT_EQ(server_->max_connections(), 3u);
  std::vector<std::unique_ptr<tcp::socket>> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(Connect());
    // A served request makes the connection known and idle, in this order: the server marks
    // it idle when it goes back to reading, just after the reply, which the pause waits for.
    Send(*idle.back(), "/idle");
    ASSERT_EQ(Receive(*idle.back()), "answer to /idle");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // A fourth: the first (idle the longest) is closed, the others stay.
  EXPECT_EQ(Get("/healthz"), "answer to /healthz");
  EXPECT_NE(Receive(*idle[0]).find("error"), std::string::npos);
  for (int i = 1; i < 3; ++i) {
    Send(*idle[i], "/again");
    EXPECT_EQ(Receive(*idle[i]), "answer to /again") << i;
  }
}

TEST_F(HttpServerTest, WhenEveryConnectionIsBusyANewOneIsRefused) {
  HttpServerOptions o;
  o.max_connections = 1;
  Start(o);
  auto busy = Connect();
  Send(*busy, "/slow");
  slow_started_.get_future().wait();
  EXPECT_NE(Get("/healthz").find("error"), std::string::npos);
  release_.set_value();
  EXPECT_EQ(Receive(*busy), "answer to /slow");
  // Once the server has gone back to reading on it (just after the reply), its place is free.
  std::string again;
  for (int i = 0; i < 100 && again != "answer to /healthz"; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    again = Get("/healthz");
  }
  EXPECT_EQ(again, "answer to /healthz");
}

TEST(DescriptorLimit, TheSoftLimitIsRaisedToTheHardOne) {
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  const size_t now = RaiseDescriptorLimit();
  EXPECT_GE(now, static_cast<size_t>(before.rlim_cur));
  rlimit after{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(static_cast<size_t>(after.rlim_cur), now);
  if (before.rlim_max != RLIM_INFINITY && before.rlim_max <= (rlim_t{1} << 20)) {
    EXPECT_EQ(after.rlim_cur, before.rlim_max);
  }
}

}  // namespace
}  // namespace tessera::server
