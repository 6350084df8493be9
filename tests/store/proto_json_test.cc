// store/proto_json against protobuf's own json_util, on etcd's messages: the same JSON out of
// the same message, the same message out of the same JSON.
#include "store/proto_json.h"
#include "store/etcd_wire.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "src/store/etcd_rpc.pb.h"  // generated into the build tree

namespace tessera::store {
namespace {

using nlohmann::json;
namespace pb = etcdserverpb;

template <typename M>
M ByJsonUtil(const json& in) {
  M m;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(in.dump(), &m).ok()) << in.dump();
  return m;
}

json PrintedByJsonUtil(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string text;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(m, &text, options).ok());
  return json::parse(text);
}

// Both ways, for `in` as a message of type M.
template <typename M>
void ExpectSameAsJsonUtil(const json& in) {
  const M expected = ByJsonUtil<M>(in);
  M got;
  ASSERT_TRUE(JsonToMessage(in, &got).ok()) << in.dump();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(expected, got))
      << "parsed " << in.dump() << "\nexpected " << expected.DebugString() << "\ngot "
      << got.DebugString();
  EXPECT_EQ(MessageToJson(expected), PrintedByJsonUtil(expected));
}

TEST(ProtoJsonTest, CreateTransactionAsTheStoreWritesIt) {
  ExpectSameAsJsonUtil<pb::TxnRequest>(
      {{"compare",
        {{{"key", Base64("/tessera/Job/a/b")},
          {"target", "MOD"},
          {"result", "EQUAL"},
          {"mod_revision", "0"}},
         {{"key", Base64("/tessera/_election/scheduler")},
          {"target", "CREATE"},
          {"result", "EQUAL"},
          {"create_revision", "41"}}}},
       {"success",
        {{{"request_put", {{"key", Base64("/tessera/Job/a/b")}, {"value", Base64("{\"x\":1}")}}}},
         {{"request_delete_range", {{"key", Base64("k")}, {"range_end", Base64("l")}}}}}},
       {"failure", {{{"request_range", {{"key", Base64("/tessera/Job/a/b")}}}}}}});
}

TEST(ProtoJsonTest, AnswersAsEtcdSendsThem) {
  ExpectSameAsJsonUtil<pb::TxnResponse>(
      {{"header",
        {{"cluster_id", "14841639068965178418"}, {"revision", "1234"}, {"raft_term", "7"}}},
       {"succeeded", true},
       {"responses",
        {{{"response_range",
           {{"kvs",
             {{{"key", Base64("k")},
               {"value", Base64(std::string("\0\xff", 2))},
               {"mod_revision", "9"},
               {"version", "2"}}}},
            {"count", "1"},
            {"more", true}}}},
         {{"response_put", {{"header", {{"revision", "5"}}}}}}}}});
  ExpectSameAsJsonUtil<pb::WatchResponse>(
      {{"header", {{"revision", "77"}}},
       {"watch_id", "3"},
       {"compact_revision", "50"},
       {"cancel_reason", "required revision has been compacted"},
       {"events",
        {{{"kv", {{"key", Base64("a")}, {"value", Base64("v")}, {"mod_revision", "60"}}}},
         {{"type", "DELETE"}, {"kv", {{"key", Base64("b")}, {"mod_revision", "61"}}}}}}});
  ExpectSameAsJsonUtil<pb::StatusResponse>({{"version", "3.4.30"},
                                            {"dbSize", "20480"},
                                            {"leader", "18446744073709551615"},
                                            {"errors", {"a", "b"}},
                                            {"isLearner", true}});
  ExpectSameAsJsonUtil<pb::LeaseGrantResponse>({{"ID", "7587"}, {"TTL", "10"}});
}

TEST(ProtoJsonTest, AcceptsWhatTheMappingAllows) {
  // Numbers for 64-bit integers, enums by number, lowerCamelCase names, null for a default.
  pb::RangeRequest r;
  ASSERT_TRUE(JsonToMessage({{"key", Base64("k")},
                             {"rangeEnd", Base64("l")},
                             {"limit", 1000},
                             {"revision", "12"},
                             {"sort_order", 1},
                             {"keys_only", nullptr}},
                            &r)
                  .ok());
  EXPECT_EQ(r.key(), "k");
  EXPECT_EQ(r.range_end(), "l");
  EXPECT_EQ(r.limit(), 1000);
  EXPECT_EQ(r.revision(), 12);
  EXPECT_EQ(r.sort_order(), pb::RangeRequest::ASCEND);
  EXPECT_FALSE(r.keys_only());
}

TEST(ProtoJsonTest, RefusesWhatTheMessageCannotHoldNamingTheField) {
  pb::RangeRequest r;
  Status s = JsonToMessage({{"key", Base64("k")}, {"no_such", 1}}, &r);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no_such"), std::string::npos) << s.message();
  s = JsonToMessage({{"limit", "ten"}}, &r);
  EXPECT_NE(s.message().find("etcdserverpb.RangeRequest.limit"), std::string::npos) << s.message();
  s = JsonToMessage({{"limit", "99999999999999999999"}}, &r);
  EXPECT_FALSE(s.ok());
  s = JsonToMessage({{"key", "not base64!"}}, &r);
  EXPECT_NE(s.message().find("key"), std::string::npos) << s.message();
  s = JsonToMessage({{"sort_order", "SIDEWAYS"}}, &r);
  EXPECT_NE(s.message().find("sort_order"), std::string::npos) << s.message();
  s = JsonToMessage({{"keys_only", "yes"}}, &r);
  EXPECT_FALSE(s.ok());
  pb::TxnRequest t;
  s = JsonToMessage({{"compare", {{"key", Base64("k")}}}}, &t);  // an object, not an array of them
  EXPECT_FALSE(s.ok());
  s = JsonToMessage(json::array(), &t);
  EXPECT_FALSE(s.ok());
}

TEST(ProtoJsonTest, Base64RoundTripsEveryLength) {
  std::string bytes;
  for (int n = 0; n < 10; ++n) {
    auto back = Unbase64(Base64(bytes));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, bytes);
    bytes.push_back(static_cast<char>(250 + n));
  }
  EXPECT_FALSE(Unbase64("abc").ok());
}

}  // namespace
}  // namespace tessera::store
