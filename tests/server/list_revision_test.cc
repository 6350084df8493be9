// Lists at a revision, as kube-apiserver serves them: resourceVersion with
// resourceVersionMatch=Exact reads the objects as they were, a list with a limit is one
// consistent list over its pages, and the combinations kube-apiserver refuses are refused alike.
// Cases ported from Kubernetes' test/integration/apiserver/apiserver_test.go (TestListOptions,
// TestAPIListChunking).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/loop_fixture.h"

namespace tessera::server {
namespace {

using nlohmann::json;

class ListRevisionTest : public LoopTest {
 protected:
  HttpResponse List(const std::string& path, const std::string& query) {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    EXPECT_TRUE(ParseQuery(query, &r.query)) << query;
    r.authorization = "Bearer " + admin_;
    return api_->Handle(r);
  }
  std::vector<std::string> Names(const HttpResponse& r) {
    std::vector<std::string> out;
    const json body = json::parse(r.body);
    for (const json& item : body["items"]) out.push_back(item["metadata"]["name"]);
    return out;
  }
  std::string JobYaml(const std::string& name, const std::string& command = "true") {
    return "apiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: " + name +
           ", namespace: team-a}\nspec:\n  tasks: [{name: main, command: [\"" + command + "\"]}]\n";
  }
  int64_t Revision() { return plane_->store().Revision(); }

  const std::string jobs_ = "/apis/tessera.io/v1/namespaces/team-a/jobs";
  const std::string pods_ = "/api/v1/namespaces/team-a/pods";
};

// TestListOptions: the combinations of resourceVersion, resourceVersionMatch and continue that
// kube-apiserver's ValidateListOptions refuses, each with its message.
TEST_F(ListRevisionTest, RefusesWhatKubeApiserverRefuses) {
  Apply(JobYaml("a"));
  const struct {
    std::string query, says;
  } cases[] = {
      {"resourceVersionMatch=Exact", "forbidden unless resourceVersion is provided"},
      {"resourceVersionMatch=Exact&resourceVersion=1&continue=00",
       "forbidden when continue is provided"},
      {"resourceVersionMatch=Newest&resourceVersion=1", "supported values"},
      {"resourceVersionMatch=Exact&resourceVersion=0", "is forbidden for resourceVersion \"0\""},
      {"resourceVersion=abc", "Invalid value"},
      {"resourceVersion=1&continue=" + std::string("3100"),
       "specifying resource version is not allowed when using continue"},
  };
  for (const auto& c : cases) {
    for (const std::string& path : {jobs_, pods_}) {
      const HttpResponse r = List(path, c.query);
      EXPECT_EQ(r.status, 422) << path << "?" << c.query << ": " << r.body;
      const std::string message = json::parse(r.body).value("message", "");
      EXPECT_NE(message.find(c.says), std::string::npos)
          << path << "?" << c.query << ": " << r.body;
    }
  }
  // Not older than: the latest state.
  const HttpResponse latest = List(jobs_, "resourceVersion=1&resourceVersionMatch=NotOlderThan");
  EXPECT_EQ(latest.status, 200) << latest.body;
  EXPECT_EQ(Names(latest), std::vector<std::string>{"a"});
}

TEST_F(ListRevisionTest, ExactReadsTheObjectsAsTheyWereThen) {
  Apply(JobYaml("a"));
  Apply(JobYaml("b"));
  const std::string then = std::to_string(Revision());
  DeleteJob("a", "team-a");
  Apply(JobYaml("c"));
  Apply(JobYaml("b", "false"));  // changed since
  const std::string exact = "resourceVersionMatch=Exact&resourceVersion=" + then;
  HttpResponse r = List(jobs_, exact);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Names(r), (std::vector<std::string>{"a", "b"}));
  const json body = json::parse(r.body);
  EXPECT_EQ(body["metadata"]["resourceVersion"], then);
  EXPECT_EQ(body["items"][1]["spec"]["tasks"][0]["command"][0], "true");
  // The Kubernetes views read the same revision: the pods of the Jobs then.
  r = List(pods_, exact);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Names(r), (std::vector<std::string>{"a-main-0", "b-main-0"}));
  // Now.
  EXPECT_EQ(Names(List(jobs_, "")), (std::vector<std::string>{"b", "c"}));
  // kube-apiserver's legacy rule: a resourceVersion with a limit and no match is exact.
  r = List(jobs_, "limit=5&resourceVersion=" + then);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Names(r), (std::vector<std::string>{"a", "b"}));
  // Once the history up to it is compacted: 410, as kube-apiserver answers.
  ASSERT_TRUE(plane_->store().Compact(Revision()).ok());
  r = List(jobs_, exact);
  EXPECT_EQ(r.status, 410) << r.body;
  EXPECT_NE(r.body.find("The resourceVersion for the provided list is too old"), std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("\"reason\":\"Expired\""), std::string::npos) << r.body;
}

// TestAPIListChunking: a list read in pages is one list, of the revision its first page was
// read at; an object made while paging is not in it.
TEST_F(ListRevisionTest, PagesAreOneConsistentList) {
  for (const char* name : {"test-0", "test-1", "test-2", "test-3"}) Apply(JobYaml(name));
  for (const std::string& path : {jobs_, pods_}) {
    const std::vector<std::string> before = Names(List(path, ""));
    std::vector<std::string> names;
    std::string first_rv, token;
    int calls = 0;
    do {
      const HttpResponse r = List(path, "limit=1" + (token.empty() ? "" : "&continue=" + token));
      ASSERT_EQ(r.status, 200) << r.body;
      const json body = json::parse(r.body);
      ++calls;
      if (calls == 1) first_rv = body["metadata"]["resourceVersion"];
      if (calls == 2) Apply(JobYaml(path == jobs_ ? "test-5" : "test-6"));
      EXPECT_EQ(body["metadata"]["resourceVersion"], first_rv);
      for (const std::string& n : Names(r)) names.push_back(n);
      token = body["metadata"].value("continue", "");
    } while (!token.empty());
    EXPECT_EQ(calls, static_cast<int>(before.size())) << path;
    EXPECT_EQ(names, before) << path;
    EXPECT_LT(names.size(), Names(List(path, "")).size()) << path;  // the one made meanwhile
  }
  // A page whose list's revision was compacted meanwhile: 410, start again.
  const HttpResponse first = List(jobs_, "limit=1");
  const std::string token = json::parse(first.body)["metadata"]["continue"];
  Apply(JobYaml("later"));
  ASSERT_TRUE(plane_->store().Compact(Revision()).ok());
  const HttpResponse r = List(jobs_, "limit=1&continue=" + token);
  EXPECT_EQ(r.status, 410) << r.body;
  EXPECT_NE(r.body.find("continue parameter is too old"), std::string::npos) << r.body;
}

// A list served whole is written item by item (ListText in server/api_common.h), without a
// document of the whole list: it is the same text, in the same order, as the same list read as
// one page of a document (`limit` above its size), for native objects and for views, in a
// namespace and across them, with a selector.
TEST_F(ListRevisionTest, AListServedWholeIsTheTextOfItsOnePageDocument) {
  Apply(R"(apiVersion: tessera.io/v1
kind: Job
metadata: {name: a, namespace: team-a, labels: {tier: x}}
spec:
  tasks: [{name: main, replicas: 2, command: ["true"]}]
)");
  Apply(JobYaml("a-b"));
  Apply(JobYaml("b"));
  Apply(R"(apiVersion: tessera.io/v1
kind: Job
metadata: {name: a, namespace: team-b, labels: {tier: x}}
spec:
  tasks: [{name: main, command: ["true"]}]
)");
  for (const std::string& path :
       {jobs_, pods_, std::string("/apis/tessera.io/v1/jobs"), std::string("/api/v1/pods"),
        std::string("/apis/batch/v1/jobs")}) {
    for (const std::string selector : {"", "labelSelector=tier%3Dx"}) {
      const HttpResponse whole = List(path, selector);
      const HttpResponse page = List(path, "limit=100" + (selector.empty() ? "" : "&" + selector));
      ASSERT_EQ(whole.status, 200) << path << ": " << whole.body;
      EXPECT_EQ(whole.body, page.body) << path << "?" << selector;
    }
  }
  // Pods in (namespace, name) order, not their Jobs' order: a-b's pod before a's.
  EXPECT_EQ(Names(List(pods_, "")),
            (std::vector<std::string>{"a-b-main-0", "a-main-0", "a-main-1", "b-main-0"}));
  EXPECT_EQ(Names(List("/api/v1/pods", "labelSelector=tier%3Dx")),
            (std::vector<std::string>{"a-main-0", "a-main-1", "a-main-0"}));
  // Pages of two, kept as the pods come (Page): the same order, the rest counted.
  std::vector<std::string> paged;
  std::vector<int64_t> remaining;
  std::string token;
  do {
    const HttpResponse r = List(pods_, "limit=2" + (token.empty() ? "" : "&continue=" + token));
    ASSERT_EQ(r.status, 200) << r.body;
    const json meta = json::parse(r.body)["metadata"];
    for (const std::string& n : Names(r)) paged.push_back(n);
    remaining.push_back(meta.value("remainingItemCount", int64_t{0}));
    token = meta.value("continue", "");
  } while (!token.empty());
  EXPECT_EQ(paged, Names(List(pods_, "")));
  EXPECT_EQ(remaining, (std::vector<int64_t>{2, 0}));
}

}  // namespace
}  // namespace tessera::server
