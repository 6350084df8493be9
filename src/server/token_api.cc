// /apis/tessera.io/v1/tokens: the admin lists, makes (for a namespace, a node's agent, or
// metrics) and revokes tokens.
#include "api/fields.h"
#include "api/json_read.h"
#include "server/api_common.h"
#include "server/api_server.h"
#include "server/json_names.h"

namespace tessera::server {

HttpResponse ApiServer::Tokens(const HttpRequest& req, const Principal& who) {
  using Role = Principal::Role;
  const bool admin = who.role == Role::kAdmin;
  if (req.method == "GET" && req.path == GroupPath("/tokens")) {
    if (!admin) return Error(PermissionDenied("only the admin token lists tokens"));
    auto list = tokens_.List();
    if (!list.ok()) return Error(list.status());
    json items = json::array();
    for (const TokenInfo& t : *list) {
      json item = {{"id", t.id}, {"role", RoleName(t.role)}};
      if (!t.ns.empty()) item["namespace"] = t.ns;
      if (!t.node.empty()) item["node"] = t.node;
      if (!t.created.empty()) item["created"] = t.created;
      items.push_back(std::move(item));
    }
    return Json(200, {{"kind", "TokenList"}, {"apiVersion", api::kApiVersion}, {"items", items}});
  }
  if (req.method == "DELETE" && req.path.starts_with(GroupPath("/tokens/"))) {
    if (!admin) return Error(PermissionDenied("only the admin token revokes tokens"));
    const std::string id = req.path.substr(GroupPath("/tokens/").size());
    if (Status s = tokens_.Revoke(id); !s.ok()) return Error(s);
    feed_.CatchUp();
    return Json(
        200, {{"kind", "Status"}, {"status", "Success"}, {"message", "token " + id + " revoked"}});
  }
  if (req.method != "POST" || req.path != GroupPath("/tokens")) {
    return Reply(405, "application/json",
                 StatusJson(405, "MethodNotAllowed",
                            "tokens are created with POST, listed with GET and revoked with "
                            "DELETE " +
                                GroupPath("/tokens/{id}")));
  }
  if (!admin && who.role != Role::kJoin) {
    return Error(PermissionDenied("only the admin token creates tokens"));
  }
  auto body = api::ParseJson(req.body);
  if (!body.ok()) return Error(body.status());
  api::Fields f(*body, "");
  std::string ns, node;
  int role = 0;
  if (Status s = f.String("namespace", &ns); !s.ok()) return Error(s);
  if (Status s = f.String("node", &node); !s.ok()) return Error(s);
  if (Status s = f.Enum("role", {"namespace", "agent", "metrics"}, &role); !s.ok()) {
    return Error(s);
  }
  if (Status s = f.Finish(); !s.ok()) return Error(s);
  if (role != 0 && !ns.empty()) {
    return Error(InvalidArgument("namespace: only a namespace token has one"));
  }
  if (role != 1 && !node.empty())
    return Error(InvalidArgument("node: only an agent token has one"));
  const std::string created = FormatTime(clock_());
  json reply;
  Result<std::string> token = Internal("no token");
  if (who.role == Role::kJoin && (role != 1 || node.empty())) {
    return Error(PermissionDenied("a join token only creates an agent token for a node"));
  }
  if (role == 1 && node.empty()) {
    token = tokens_.Create(Role::kJoin, "", "", created);
    reply = {{"role", "join"}};
  } else if (role == 1) {
    if (Status s = api::ValidateName(node, false, "node"); !s.ok()) return Error(s);
    if (who.role == Role::kJoin) {
      // A join token mints the first agent token of a node, and nothing else.
      auto has = tokens_.NodeHasAgent(node);
      if (!has.ok()) return Error(has.status());
      if (*has) {
        return Error(Conflict("node " + node +
                              " already has an agent token; the admin revokes "
                              "it (tessera token revoke) before the node joins again"));
      }
    }
    token = tokens_.Create(Role::kAgent, "", node, created);
    reply = {{"role", "agent"}, {"node", node}};
  } else if (role == 2) {
    token = tokens_.Create(Role::kMetrics, "", "", created);
    reply = {{"role", "metrics"}};
  } else {
    if (Status s = api::ValidateName(ns, true, "namespace"); !s.ok()) return Error(s);
    token = tokens_.Create(Role::kNamespace, ns, "", created);
    reply = {{"role", "namespace"}, {"namespace", ns}};
  }
  if (!token.ok()) return Error(token.status());
  feed_.CatchUp();
  reply["id"] = token->substr(0, token->find('.'));
  reply["token"] = *token;
  return Json(201, reply);
}

}  // namespace tessera::server
