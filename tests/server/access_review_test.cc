// kubectl auth can-i and auth whoami: SelfSubjectAccessReview answered from the token's scope,
// SelfSubjectReview naming the token's user.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "loop_fixture.h"

namespace tessera::server {
namespace {

using nlohmann::json;

class AccessReviewTest : public LoopTest {
 protected:
  HttpResponse Post(const std::string& token, const std::string& path, const json& body,
                    const std::string& type = "application/json") {
    HttpRequest r;
    r.method = "POST";
    r.path = path;
    r.authorization = "Bearer " + token;
    r.content_type = type;
    r.body = type == "application/json" ? body.dump() : body.get<std::string>();
    return api_->Handle(r);
  }
  std::string Mint(const json& body) {
    const HttpResponse r = Post(admin_, "/apis/tessera.io/v1/tokens", body);
    EXPECT_EQ(r.status, 201) << r.body;
    return json::parse(r.body)["token"];
  }
  // kubectl auth can-i <verb> <resource> [-n ns]: allowed, or the reason it is not.
  std::pair<bool, std::string> CanI(const std::string& token, const std::string& verb,
                                    const std::string& group, const std::string& resource,
                                    const std::string& ns) {
    const json review = {
        {"apiVersion", "authorization.k8s.io/v1"},
        {"kind", "SelfSubjectAccessReview"},
        {"spec",
         {{"resourceAttributes",
           {{"namespace", ns}, {"verb", verb}, {"group", group}, {"resource", resource}}}}}};
    const HttpResponse r =
        Post(token, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review);
    EXPECT_EQ(r.status, 201) << r.body;
    const json out = json::parse(r.body);
    EXPECT_EQ(out["kind"], "SelfSubjectAccessReview");
    return {out["status"]["allowed"].get<bool>(), out["status"].value("reason", "")};
  }
};

TEST_F(AccessReviewTest, CanIAnswersFromTheTokensScope) {
  const std::string team_a = Mint({{"namespace", "team-a"}});
  const std::string agent = Mint({{"role", "agent"}, {"node", "n1"}});
  EXPECT_TRUE(CanI(admin_, "delete", "kueue.x-k8s.io", "clusterqueues", "").first);
  EXPECT_TRUE(CanI(team_a, "get", "", "pods", "team-a").first);
  EXPECT_TRUE(CanI(team_a, "create", "batch", "jobs", "team-a").first);
  EXPECT_TRUE(CanI(team_a, "*", "batch", "jobs", "team-a").first);
  auto other = CanI(team_a, "list", "", "pods", "team-b");
  EXPECT_FALSE(other.first);
  EXPECT_NE(other.second.find("team-a"), std::string::npos) << other.second;
  EXPECT_FALSE(CanI(team_a, "create", "kueue.x-k8s.io", "clusterqueues", "").first);
  EXPECT_FALSE(CanI(agent, "get", "", "pods", "team-a").first);
  auto unknown = CanI(team_a, "create", "apps", "deployments", "team-a");
  EXPECT_FALSE(unknown.first);
  EXPECT_NE(unknown.second.find("deployments"), std::string::npos) << unknown.second;
  // Discovery is every token's.
  const HttpResponse open =
      Post(team_a, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
           {{"spec", {{"nonResourceAttributes", {{"path", "/apis"}, {"verb", "get"}}}}}});
  ASSERT_EQ(open.status, 201) << open.body;
  EXPECT_EQ(json::parse(open.body)["status"]["allowed"], true);
  EXPECT_EQ(Post(team_a, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                 {{"spec", json::object()}})
                .status,
            400);
}

TEST_F(AccessReviewTest, WhoAmINamesTheTokensUser) {
  const std::string team_a = Mint({{"namespace", "team-a"}});
  const HttpResponse r =
      Post(team_a, "/apis/authentication.k8s.io/v1/selfsubjectreviews",
           {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "SelfSubjectReview"}});
  ASSERT_EQ(r.status, 201) << r.body;
  const json out = json::parse(r.body);
  EXPECT_EQ(out["status"]["userInfo"]["username"], "tessera:namespace:team-a");
  EXPECT_EQ(out["status"]["userInfo"]["groups"][0], "system:authenticated");
}

// A kind Tessera does not serve is 404 (kubectl: "the server doesn't have a resource type"),
// whatever its body: protobuf ones answered 415, naming nothing anyone could act on.
TEST_F(AccessReviewTest, AnUnservedKindIsNotFoundEvenInProtobuf) {
  const std::string body = std::string("k8s\0", 4) + "\x0a\x0e\x0a\x07" + "apps/v1" + "\x12\x03" +
                           "Dep" + std::string("\x12\x00", 2);
  const HttpResponse r = Post(admin_, "/apis/apps/v1/namespaces/default/deployments", body,
                              "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(r.status, 404) << r.body;
}

// Services: none (a pod shares its node's network). Listed (kubectl cluster-info lists those of
// kube-system), and a write, in any encoding, refused saying why; a protobuf body that cannot be
// decoded is answered the same, never looped back through the decoder.
TEST_F(AccessReviewTest, ServicesAreNoneAndTheirWritesAreRefusedSayingWhy) {
  HttpRequest get;
  get.method = "GET";
  get.path = "/api/v1/namespaces/kube-system/services";
  get.query["labelSelector"] = "kubernetes.io/cluster-service=true";
  get.authorization = "Bearer " + admin_;
  HttpResponse r = api_->Handle(get);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["kind"], "ServiceList");
  EXPECT_TRUE(json::parse(r.body)["items"].empty());
  get.path = "/api/v1/namespaces/default/services/kubernetes";
  EXPECT_EQ(api_->Handle(get).status, 404);
  const std::string body = std::string("k8s\0", 4) + "\x0a\x0a\x0a\x02" + "v1" + "\x12\x07" +
                           "Service" + std::string("\x12\x00", 2);
  r = Post(admin_, "/api/v1/namespaces/default/services", body,
           "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(r.status, 405) << r.body;
  EXPECT_NE(r.body.find("Tessera has no Services"), std::string::npos) << r.body;
  r = Post(admin_, "/api/v1/namespaces/default/services",
           {{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", {{"name", "web"}}}});
  EXPECT_EQ(r.status, 405) << r.body;
  // A namespace token reads its own namespace's (none), not another's.
  get.path = "/api/v1/namespaces/team-b/services";
  get.authorization = "Bearer " + Mint({{"namespace", "team-a"}});
  EXPECT_EQ(api_->Handle(get).status, 403);
  get.path = "/api/v1/namespaces/team-a/services";
  EXPECT_EQ(api_->Handle(get).status, 200);
}

}  // namespace
}  // namespace tessera::server
