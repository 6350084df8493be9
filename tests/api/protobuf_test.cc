#include "api/protobuf.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace tessera::api {
namespace {

using nlohmann::json;

// A protobuf writer for the test's bodies.
std::string Varint(uint64_t v) {
  std::string out;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    if (v != 0) b |= 0x80;
    out += static_cast<char>(b);
  } while (v != 0);
  return out;
}
std::string Bytes(int field, const std::string& value) {
  return Varint(static_cast<uint64_t>(field) << 3 | 2) + Varint(value.size()) + value;
}
std::string Int(int field, uint64_t value) {
  return Varint(static_cast<uint64_t>(field) << 3) + Varint(value);
}
std::string Entry(int field, const std::string& key, const std::string& value) {
  return Bytes(field, Bytes(1, key) + Bytes(2, value));
}
// The "k8s\0" envelope around `raw`, an object of `api` `kind`.
std::string Envelope(const std::string& api, const std::string& kind, const std::string& raw) {
  return std::string("k8s\0", 4) + Bytes(1, Bytes(1, api) + Bytes(2, kind)) + Bytes(2, raw) +
         Bytes(3, "") + Bytes(4, "");
}

TEST(KubeProtobuf, ANamespaceAsKubectlCreateSendsIt) {
  // metadata (name, an empty generateName, a zero creationTimestamp, labels), spec, and a
  // status whose phase is empty: what holds nothing is left out.
  const std::string meta = Bytes(1, "team-a") + Bytes(2, "") + Bytes(8, Int(1, 0)) +
                           Entry(11, "tier", "gold") + Int(7, 0);
  const std::string raw =
      Bytes(1, meta) + Bytes(2, Bytes(1, "kubernetes")) + Bytes(3, Bytes(1, ""));
  auto obj = KubeProtobufToJson(Envelope("v1", "Namespace", raw));
  ASSERT_TRUE(obj.ok()) << obj.status().message();
  EXPECT_EQ(*obj, json::parse(R"({"apiVersion": "v1", "kind": "Namespace",
      "metadata": {"name": "team-a", "labels": {"tier": "gold"}},
      "spec": {"finalizers": ["kubernetes"]}})"));
}

TEST(KubeProtobuf, AJobWithItsPodTemplate) {
  const std::string limits = Bytes(1, Bytes(1, "nvidia.com/gpu") + Bytes(2, Bytes(1, "2")));
  const std::string container = Bytes(1, "train") + Bytes(2, "pytorch:24") + Bytes(3, "python") +
                                Bytes(3, "train.py") + Bytes(8, limits) + Int(16, 0) +
                                Bytes(6, "");  // stdin false, an unknown empty
  const std::string pod = Bytes(2, container) + Bytes(3, "Never");
  const std::string spec = Int(1, 2) + Bytes(6, Bytes(2, pod)) + Int(10, 1);
  auto obj =
      KubeProtobufToJson(Envelope("batch/v1", "Job", Bytes(1, Bytes(1, "j")) + Bytes(2, spec)));
  ASSERT_TRUE(obj.ok()) << obj.status().message();
  EXPECT_EQ((*obj)["spec"], json::parse(R"({"parallelism": 2, "suspend": true, "template":
      {"spec": {"restartPolicy": "Never", "containers": [{"name": "train", "image": "pytorch:24",
      "command": ["python", "train.py"], "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}})"));
}

TEST(KubeProtobuf, APriorityClassKeepsAZeroValue) {
  auto obj = KubeProtobufToJson(Envelope("scheduling.k8s.io/v1", "PriorityClass",
                                         Bytes(1, Bytes(1, "low")) + Int(2, 0) + Int(3, 0)));
  ASSERT_TRUE(obj.ok()) << obj.status().message();
  EXPECT_EQ((*obj)["value"], 0);
  EXPECT_FALSE(obj->contains("globalDefault"));
}

TEST(KubeProtobuf, WhatCannotBeReadIsAnErrorNamingIt) {
  // A field with a value that is not listed.
  auto bad = KubeProtobufToJson(
      Envelope("v1", "Namespace", Bytes(1, Bytes(1, "x") + Bytes(99, "something"))));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("metadata: ObjectMeta field 99"), std::string::npos)
      << bad.status().message();
  // A kind not decoded here.
  bad = KubeProtobufToJson(Envelope("apps/v1", "Deployment", Bytes(1, Bytes(1, "x"))));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("apps/v1 Deployment"), std::string::npos);
  EXPECT_NE(bad.status().message().find("application/json"), std::string::npos);
  // Not the envelope, a truncated body, the wrong wire type, a length beyond the end.
  EXPECT_FALSE(KubeProtobufToJson(R"({"kind":"Namespace"})").ok());
  const std::string whole = std::string("k8s\0", 4) +
                            Bytes(1, Bytes(1, "v1") + Bytes(2, "Namespace")) +
                            Bytes(2, Bytes(1, Bytes(1, "team-a")));
  for (size_t cut = 4; cut < whole.size(); ++cut) {
    // Cut at a field's end, the rest is a shorter valid message; inside one, an error.
    auto got = KubeProtobufToJson(whole.substr(0, cut));
    if (got.ok()) {
      EXPECT_NE(got->value("metadata", json::object()).value("name", ""), "team-a");
    }
  }
  EXPECT_FALSE(KubeProtobufToJson(whole.substr(0, whole.size() - 2)).ok());
  EXPECT_FALSE(KubeProtobufToJson(Envelope("v1", "Namespace", Bytes(1, Int(1, 5)))).ok());
  EXPECT_FALSE(
      KubeProtobufToJson(std::string("k8s\0", 4) + Varint(2 << 3 | 2) + Varint(1000)).ok());
}

// What kubectl drain sends (policy/v1 Eviction with its DeleteOptions), and what kubectl delete
// sends when it cannot evict (v1 DeleteOptions): a grace period of 0 is a value, not left out.
TEST(KubeProtobuf, AnEvictionAndDeleteOptionsAsKubectlSendsThem) {
  const std::string options = Int(1, 0) + Bytes(2, Bytes(1, "uid-1")) + Bytes(5, "All");
  const std::string raw =
      Bytes(1, Bytes(1, "train-main-0") + Bytes(3, "team-a")) + Bytes(2, options);
  auto obj = KubeProtobufToJson(Envelope("policy/v1", "Eviction", raw));
  ASSERT_TRUE(obj.ok()) << obj.status().message();
  EXPECT_EQ(*obj, json::parse(R"({"apiVersion": "policy/v1", "kind": "Eviction",
      "metadata": {"name": "train-main-0", "namespace": "team-a"},
      "deleteOptions": {"gracePeriodSeconds": 0, "preconditions": {"uid": "uid-1"},
                        "dryRun": ["All"]}})"));
  auto del = KubeProtobufToJson(Envelope("v1", "DeleteOptions", Bytes(4, "Background")));
  ASSERT_TRUE(del.ok()) << del.status().message();
  EXPECT_EQ(*del, json::parse(R"({"apiVersion": "v1", "kind": "DeleteOptions",
      "propagationPolicy": "Background"})"));
}

}  // namespace
}  // namespace tessera::api
