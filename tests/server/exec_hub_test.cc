#include "server/exec_hub.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace tessera::server {
namespace {

using nlohmann::json;

ExecRequest On(const std::string& node, const std::string& owner = "namespace/a/t1") {
  return {"a", "train", "worker-0", node, {"sh", "-c", "echo hi"}, owner};
}

// The frames a client would read now (one JSON text per line).
std::vector<json> ReadFrames(ExecHub& hub, const std::string& id, bool* done) {
  std::vector<json> out;
  auto text = hub.Read(id, done, nullptr);
  if (!text) return out;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) out.push_back(json::parse(line));
  return out;
}

TEST(ExecHub, ASessionGoesToItsNodesAgentOnceAndItsOutputToItsClient) {
  ExecHub hub;
  ASSERT_TRUE(hub.Open("s1", On("n1"), 0).ok());
  EXPECT_EQ(hub.Open("s1", On("n1"), 0).code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(hub.Claim("n2", 1).empty());
  // Output before the agent claimed it is not accepted.
  EXPECT_EQ(hub.Append("s1", "n1", "stdout", "x", 1).code(), StatusCode::kNotFound);
  const json claimed = hub.Claim("n1", 1);
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0]["id"], "s1");
  EXPECT_EQ(claimed[0]["pod"], "worker-0");
  EXPECT_EQ(claimed[0]["command"][2], "echo hi");
  EXPECT_TRUE(hub.Claim("n1", 2).empty()) << "handed out twice";

  // Another node's agent cannot write into it.
  EXPECT_EQ(hub.Append("s1", "n2", "stdout", "x", 2).code(), StatusCode::kNotFound);
  EXPECT_EQ(hub.Append("s1", "n1", "stdin", "x", 2).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(hub.Append("s1", "n1", "stdout", "hello\n", 2).ok());
  ASSERT_TRUE(hub.Append("s1", "n1", "stderr", "oops\n", 2).ok());
  ASSERT_TRUE(hub.Append("s1", "n1", "stdout", "", 3).ok());  // a sign of life: no frame
  bool done = true;
  std::vector<json> frames = ReadFrames(hub, "s1", &done);
  EXPECT_FALSE(done);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0], json({{"stdout", "hello\n"}}));
  EXPECT_EQ(frames[1], json({{"stderr", "oops\n"}}));

  // Nothing new: the reader is woken when there is.
  int woken = 0;
  EXPECT_FALSE(hub.Read("s1", &done, [&] { ++woken; }));
  ASSERT_TRUE(hub.Finish("s1", "n1", {{"exitCode", 3}}, 4).ok());
  EXPECT_EQ(woken, 1);
  frames = ReadFrames(hub, "s1", &done);
  EXPECT_TRUE(done);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0], json({{"exitCode", 3}}));
  EXPECT_EQ(hub.open_sessions(), 0u) << "read to its end: gone";
}

TEST(ExecHub, OnlyItsOpenerReadsIt) {
  ExecHub hub;
  ASSERT_TRUE(hub.Open("s1", On("n1", "namespace/a/t1"), 0).ok());
  EXPECT_TRUE(hub.CheckOwner("s1", "namespace/a/t1").ok());
  EXPECT_EQ(hub.CheckOwner("s1", "namespace/a/t2").code(), StatusCode::kNotFound);
  EXPECT_EQ(hub.CheckOwner("nope", "namespace/a/t1").code(), StatusCode::kNotFound);
}

TEST(ExecHub, AClientThatLeavesStopsTheCommand) {
  ExecHub hub;
  ASSERT_TRUE(hub.Open("s1", On("n1"), 0).ok());
  hub.Claim("n1", 0);
  hub.Abandon("s1");
  // The agent hears of it at its next call, and stops the command.
  EXPECT_EQ(hub.Append("s1", "n1", "stdout", "more", 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(hub.Finish("s1", "n1", {{"exitCode", 0}}, 1).code(), StatusCode::kFailedPrecondition);
  hub.Expire(1'000'000);
  EXPECT_EQ(hub.open_sessions(), 0u);
  // A session abandoned before any agent claimed it is simply gone.
  ASSERT_TRUE(hub.Open("s2", On("n1"), 0).ok());
  hub.Abandon("s2");
  EXPECT_TRUE(hub.Claim("n1", 1).empty());
  EXPECT_EQ(hub.open_sessions(), 0u);
}

TEST(ExecHub, ClientsAreToldWhenNoAgentTakesTheCommandOrItsAgentFallsSilent) {
  ExecHub::Limits limits;
  limits.claim_timeout_ms = 100;
  limits.silence_timeout_ms = 200;
  ExecHub hub(limits);
  ASSERT_TRUE(hub.Open("unclaimed", On("gone"), 0).ok());
  ASSERT_TRUE(hub.Open("silent", On("n1"), 0).ok());
  hub.Claim("n1", 50);
  hub.Expire(100);  // not yet
  bool done = false;
  EXPECT_FALSE(hub.Read("unclaimed", &done, nullptr));
  hub.Expire(101);
  std::vector<json> frames = ReadFrames(hub, "unclaimed", &done);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(done);
  EXPECT_NE(frames[0]["error"].get<std::string>().find("did not take the command up"),
            std::string::npos);
  EXPECT_TRUE(hub.Claim("gone", 102).empty()) << "too late to run it";
  hub.Expire(251);
  frames = ReadFrames(hub, "silent", &done);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_NE(frames[0]["error"].get<std::string>().find("stopped answering"), std::string::npos);
}

TEST(ExecHub, OutputWaitsForASlowClientAndSessionsAreBounded) {
  ExecHub::Limits limits;
  limits.max_sessions = 3;
  limits.max_per_owner = 2;
  limits.max_buffered = 100;
  ExecHub hub(limits);
  ASSERT_TRUE(hub.Open("s1", On("n1"), 0).ok());
  ASSERT_TRUE(hub.Open("s2", On("n1"), 0).ok());
  EXPECT_EQ(hub.Open("s3", On("n1"), 0).code(), StatusCode::kResourceExhausted);  // its owner's
  ASSERT_TRUE(hub.Open("s3", On("n1", "namespace/b/t9"), 0).ok());
  EXPECT_EQ(hub.Open("s4", On("n1", "namespace/c/t7"), 0).code(),
            StatusCode::kResourceExhausted);  // everyone's
  hub.Claim("n1", 0);
  ASSERT_TRUE(hub.Append("s1", "n1", "stdout", std::string(60, 'x'), 0).ok());
  EXPECT_EQ(hub.Append("s1", "n1", "stdout", std::string(60, 'y'), 0).code(),
            StatusCode::kResourceExhausted);
  bool done = false;
  ASSERT_EQ(ReadFrames(hub, "s1", &done).size(), 1u);
  EXPECT_TRUE(hub.Append("s1", "n1", "stdout", std::string(60, 'y'), 0).ok());
  // Output that is not UTF-8 reaches the client replaced, not as an error.
  ASSERT_TRUE(hub.Append("s2", "n1", "stdout", std::string("a\xff", 2), 0).ok());
  std::vector<json> frames = ReadFrames(hub, "s2", &done);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0]["stdout"], "a\xEF\xBF\xBD");
}

TEST(ExecHub, AnAgentWaitingForWorkIsWokenWhenASessionOpensForItsNode) {
  ExecHub hub;
  int woken_n1 = 0, woken_n2 = 0;
  auto w1 = hub.WaitForWork("n1", [&] { ++woken_n1; });
  auto w2 = hub.WaitForWork("n2", [&] { ++woken_n2; });
  ASSERT_TRUE(w1 && w2);
  ASSERT_TRUE(hub.Open("s1", On("n1"), 0).ok());
  EXPECT_EQ(woken_n1, 1);
  EXPECT_EQ(woken_n2, 0);
  // Work already waiting: nothing is registered, the caller claims it.
  EXPECT_FALSE(hub.WaitForWork("n1", [&] { ++woken_n1; }));
  hub.StopWaiting(*w2);
  ASSERT_TRUE(hub.Open("s2", On("n2"), 0).ok());
  EXPECT_EQ(woken_n2, 0);
}

// An agent's poll that ended (timed out) just as it claimed a session never delivers it: the
// session goes back, the node's next poll is woken and gets it; another node's agent cannot
// take it back, and an ended session stays ended.
TEST(ExecHub, ASessionClaimedByAPollThatEndedGoesToTheNextPoll) {
  ExecHub hub;
  ASSERT_TRUE(hub.Open("s1", On("n1"), 0).ok());
  ASSERT_EQ(hub.Claim("n1", 1).size(), 1u);
  int woken = 0;
  EXPECT_TRUE(hub.WaitForWork("n1", [&] { ++woken; }).has_value());
  hub.Unclaim({"s1"}, "n2");
  EXPECT_EQ(woken, 0);
  EXPECT_TRUE(hub.Claim("n1", 2).empty());
  hub.Unclaim({"s1", "unknown"}, "n1");
  EXPECT_EQ(woken, 1);
  const json again = hub.Claim("n1", 3);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0]["id"], "s1");
  ASSERT_TRUE(hub.Finish("s1", "n1", {{"exitCode", 0}}, 4).ok());
  hub.Unclaim({"s1"}, "n1");
  EXPECT_TRUE(hub.Claim("n1", 5).empty());
}

}  // namespace
}  // namespace tessera::server

namespace tessera::server {
namespace {

// kubectl exec -i and kubectl cp into a pod: the client's input reaches the agent in order, to
// its end; the client waits while the agent has not taken what is buffered; output keeps its
// bytes as the command wrote them.
TEST(ExecHub, InputGoesToTheAgentInOrderWithRoomForTheClient) {
  ExecHub::Limits limits;
  limits.max_buffered = 8;
  ExecHub hub(limits);
  ExecRequest r = On("n1");
  r.stdin = true;
  ASSERT_TRUE(hub.Open("s1", r, 0).ok());
  // Sent before the agent claims it: kept.
  EXPECT_TRUE(hub.Input("s1", "abc", false, nullptr));
  const json claimed = hub.Claim("n1", 1);
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0]["stdin"], true);

  bool eof = true;
  auto got = hub.TakeInput("s1", "n1", &eof, nullptr);
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, "abc");
  EXPECT_FALSE(eof);
  EXPECT_EQ(hub.TakeInput("s1", "n2", &eof, nullptr).status().code(), StatusCode::kNotFound);

  // Nothing yet: the agent's poll is woken by the next input.
  int polled = 0;
  got = hub.TakeInput("s1", "n1", &eof, [&] { ++polled; });
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  // Past the limit: the client is told to wait, and resumed once the agent took it.
  int resumed = 0;
  EXPECT_FALSE(hub.Input("s1", "0123456789", false, [&] { ++resumed; }));
  EXPECT_EQ(polled, 1);
  EXPECT_EQ(resumed, 0);
  got = hub.TakeInput("s1", "n1", &eof, nullptr);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, "01234567");  // one answer stays within the limit
  EXPECT_EQ(resumed, 1);
  got = hub.TakeInput("s1", "n1", &eof, nullptr);
  EXPECT_EQ(**got, "89");
  // The end of the input.
  EXPECT_TRUE(hub.Input("s1", "", true, nullptr));
  got = hub.TakeInput("s1", "n1", &eof, nullptr);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, "");
  EXPECT_TRUE(eof);
  EXPECT_TRUE(hub.Input("s1", "late", false, nullptr));  // after the end: dropped
  got = hub.TakeInput("s1", "n1", &eof, nullptr);
  EXPECT_TRUE(eof);

  // Output as the command wrote it, every byte.
  const std::string bytes("\x00\xff\xfe\x80\n", 5);
  ASSERT_TRUE(hub.Append("s1", "n1", "stdout", bytes, 2).ok());
  bool done = false;
  auto frames = hub.ReadFrames("s1", &done, nullptr);
  ASSERT_TRUE(frames.has_value());
  ASSERT_EQ(frames->size(), 1u);
  EXPECT_EQ((*frames)[0].stream, "stdout");
  EXPECT_EQ((*frames)[0].data, bytes);
}

TEST(ExecHub, TheEndOfASessionWakesTheAgentsInputPoll) {
  ExecHub hub;
  ExecRequest r = On("n1");
  r.stdin = true;
  ASSERT_TRUE(hub.Open("s1", r, 0).ok());
  hub.Claim("n1", 1);
  bool eof = false;
  int woken = 0;
  auto got = hub.TakeInput("s1", "n1", &eof, [&] { ++woken; });
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  hub.Abandon("s1");  // the client left
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(hub.TakeInput("s1", "n1", &eof, nullptr).status().code(),
            StatusCode::kFailedPrecondition);
  // A session without stdin takes none.
  ASSERT_TRUE(hub.Open("s2", On("n1"), 0).ok());
  EXPECT_TRUE(hub.Input("s2", "x", false, nullptr));
  hub.Claim("n1", 1);
  got = hub.TakeInput("s2", "n1", &eof, nullptr);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
}

}  // namespace
}  // namespace tessera::server
