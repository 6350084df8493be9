#include "server/websocket.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::server::websocket {
namespace {

// RFC 6455 section 1.3's example handshake.
TEST(WebSocket, AcceptKeyIsRfc6455s) {
  EXPECT_EQ(AcceptKey("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(WebSocket, FramesCarryTheirLengthInTheShortestForm) {
  EXPECT_EQ(Frame(Opcode::kBinary, "\x01hi"), std::string("\x82\x03\x01hi", 5));
  const std::string mid(300, 'x');
  const std::string f = Frame(Opcode::kBinary, mid);
  ASSERT_EQ(f.size(), 4 + mid.size());
  EXPECT_EQ(static_cast<uint8_t>(f[1]), 126);
  EXPECT_EQ((static_cast<uint8_t>(f[2]) << 8) | static_cast<uint8_t>(f[3]), 300);
  const std::string big(70000, 'y');
  const std::string g = Frame(Opcode::kBinary, big);
  ASSERT_EQ(g.size(), 10 + big.size());
  EXPECT_EQ(static_cast<uint8_t>(g[1]), 127);
  EXPECT_EQ(CloseFrame(1000), std::string("\x88\x02\x03\xe8", 4));
}

// A client's masked frame, as RFC 6455 section 5.7's example ("Hello", masked).
TEST(WebSocket, TakesMaskedClientFramesAsTheyArrive) {
  const std::string hello("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11);
  std::string buf = hello.substr(0, 6);
  bool bad = false;
  EXPECT_FALSE(TakeFrame(&buf, 1024, &bad).has_value());  // incomplete
  EXPECT_FALSE(bad);
  buf += hello.substr(6) + hello;  // the rest, and a second frame
  auto f = TakeFrame(&buf, 1024, &bad);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->op, Opcode::kText);
  EXPECT_EQ(f->payload, "Hello");
  EXPECT_EQ(buf, hello);
  ASSERT_TRUE(TakeFrame(&buf, 1024, &bad).has_value());
  EXPECT_TRUE(buf.empty());
  // Unmasked (a server's frame sent back) or above the limit: refused.
  std::string unmasked = Frame(Opcode::kPing, "x");
  EXPECT_FALSE(TakeFrame(&unmasked, 1024, &bad).has_value());
  EXPECT_TRUE(bad);
  bad = false;
  std::string large = hello;
  EXPECT_FALSE(TakeFrame(&large, 4, &bad).has_value());
  EXPECT_TRUE(bad);
}

TEST(WebSocket, ChoosesTheMostPreferredOfferedProtocol) {
  const auto kube = {std::string_view("v5.channel.k8s.io"), std::string_view("v4.channel.k8s.io")};
  EXPECT_EQ(ChooseProtocol("v4.channel.k8s.io, v5.channel.k8s.io", kube), "v5.channel.k8s.io");
  EXPECT_EQ(ChooseProtocol("channel.k8s.io,v4.channel.k8s.io", kube), "v4.channel.k8s.io");
  EXPECT_EQ(ChooseProtocol("base64.channel.k8s.io", kube), "");
  EXPECT_EQ(ChooseProtocol("", kube), "");
}

}  // namespace
}  // namespace tessera::server::websocket
