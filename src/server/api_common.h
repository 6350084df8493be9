// What the API server's request handlers share: replies in Kubernetes' shape, the stored and
// served forms of objects, the role-based authorization of a verb on a kind, and the checks of
// an object written through any path.
#ifndef TESSERA_SERVER_API_COMMON_H_
#define TESSERA_SERVER_API_COMMON_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/object.h"
#include "core/status.h"
#include "server/auth.h"
#include "server/http_server.h"
#include "store/store.h"

namespace tessera::server {

HttpResponse Reply(int code, std::string content_type, std::string body);
// A Kubernetes Status object with the HTTP code and reason of `s`.
HttpResponse Error(const Status& s);
HttpResponse Json(int code, const nlohmann::json& body);
// The request's includeObject ("Metadata" when absent): what each row of a Table carries.
std::string IncludeObject(const HttpRequest& req);
// A 200 with a meta.k8s.io/v1 Table, its rows carrying what the request's includeObject asks.
HttpResponse TableReply(const HttpRequest& req, nlohmann::json table);

// A random RFC 4122 version 4 UUID, as Kubernetes gives every object.
std::string NewUid();

// The stored form of an object: without its resourceVersion (the store's version is the truth).
std::string StoredBody(nlohmann::json obj);
// The served form: the stored body with the version as metadata.resourceVersion.
nlohmann::json Served(const store::StoredObject& o);
// metadata.resourceVersion of an object whose envelope is valid, if set.
std::optional<int64_t> RequestedVersion(const nlohmann::json& obj);
store::ObjectKey KeyOf(const api::ObjectId& id);
// The stored object at `key`, parsed; null when there is none.
Result<nlohmann::json> ReadJson(store::Store& store, const store::ObjectKey& key);

// A path's non-empty segments: "/apis/a//b/" -> {"apis", "a", "b"}.
std::vector<std::string_view> PathSegments(std::string_view path);

// The request's labelSelector, if it has one.
Result<std::optional<api::LabelSelector>> SelectorOf(const HttpRequest& req);

// The request's fieldSelector, if it has one; `extra` fields beyond metadata.name and
// metadata.namespace may be selected on.
Result<std::optional<api::FieldSelector>> FieldSelectorOf(const HttpRequest& req,
                                                          std::vector<std::string_view> extra = {});

// Whether `obj` passes a request's label selector (on metadata.labels) and field selector; an
// absent selector passes everything.
bool Selected(const std::optional<api::LabelSelector>& labels,
              const std::optional<api::FieldSelector>& fields, const nlohmann::json& obj);

// Whether the query parameter `name` is true: 1/t/T/true/True/TRUE, as Go's ParseBool reads it.
bool QueryFlag(const HttpRequest& req, const std::string& name);

// The request's timeoutSeconds, at least 1 and at most `max`; `fallback` when it has none.
// InvalidArgument when it is not a number.
Result<int> TimeoutSeconds(const HttpRequest& req, int fallback, int max);
// A query parameter that counts something (tailLines, limit, offset): left as it is in `*out`
// when absent; else digits only, at most 12 of them, or "<param>: must be <what>".
Status QueryCount(const HttpRequest& req, const char* param, const char* what, int64_t* out);

// Whether the request asks to watch (QueryFlag "watch").
bool Watching(const HttpRequest& req);

// Writes the watch event lines ({"type", "object"}\n) that one change of a stored object
// makes in a view; none when the view has nothing to say about it.
using WatchRender =
    std::function<void(const char* type, const store::StoredObject& o, std::string* out)>;

// A path of Tessera's group: /apis/tessera.io/v1 followed by `rest`.
std::string GroupPath(std::string_view rest);

// The revision a list is read at, from its resourceVersion, resourceVersionMatch, limit and
// continue as kube-apiserver takes them (the combinations its ValidateListOptions refuses are
// InvalidArgument). nullopt: the latest state. A revision: for resourceVersionMatch=Exact (and,
// as kube-apiserver's legacy rule, a resourceVersion other than 0 with a limit and no match);
// for a page after the first, the revision its list began at (in the continue token); for the
// first page of a list with a limit, `latest`, so that its pages are one consistent list.
Result<std::optional<int64_t>> ListRevision(const HttpRequest& req, int64_t latest);
// A list that could not be read at its revision, answered as kube-apiserver does: 410 Expired
// when that revision was compacted, 422 Invalid for ListRevision's refusals.
HttpResponse ListReadError(const Status& s, const HttpRequest& req);

// The page of a list that the request's `limit` and `continue` ask for, in order of
// (namespace, name), taken as the items come: it keeps only the first `limit` items after the
// token's (a page's documents, not the list's), and counts the rest. Finish sets `continue` (an
// opaque token naming the list's revision, list_meta's resourceVersion, and the last item given)
// and `remainingItemCount` in `list_meta` when more remain. A malformed limit or token is an error
// from Of.
class Page {
 public:
  static Result<Page> Of(const HttpRequest& req);
  void Add(nlohmann::json&& item);
  std::vector<nlohmann::json> Finish(nlohmann::json* list_meta) &&;

 private:
  using Key = std::pair<std::string, std::string>;  // namespace, name
  struct Later {
    bool operator()(const std::pair<Key, nlohmann::json>& a,
                    const std::pair<Key, nlohmann::json>& b) const {
      return a.first < b.first;
    }
  };
  int64_t limit_ = 0;  // 0: every item
  std::optional<Key> after_;
  // The smallest `limit_` keys seen, the largest on top.
  std::vector<std::pair<Key, nlohmann::json>> kept_;
  int64_t seen_ = 0;  // items after the token
};

// A list served whole (no limit, no continue, no Table) as JSON text made item by item: each item
// is written out as it is made and its document dropped, so a list never holds a document of
// every item at once (a list's documents take about eight times its text). Items come out in
// a Page's order, (namespace, name): items added in that order (a store's list) are the
// response as they come; others are put in order once, at the end. The text is what the same
// list's document would dump.
class ListText {
 public:
  ListText(std::string_view list_kind, std::string_view api_version);
  void Add(const nlohmann::json& item);
  std::string Finish(const nlohmann::json& meta) &&;

 private:
  struct Item {
    std::pair<std::string, std::string> key;  // namespace, name
    size_t offset, size;                      // in text_
  };
  std::string list_kind_;
  std::string text_;  // the list's head, then the items as added, comma-separated
  size_t head_;
  std::vector<Item> items_;
  bool ordered_ = true;
};

enum class Verb : uint8_t { kRead, kWatch, kWrite, kDelete };

// May `p` use `verb` on objects of `kind` in namespace `ns` (nullopt: all namespaces, or a
// cluster-scoped kind) named `name` (nullopt: a list or a create)? Object-level rules follow in
// ApiServer::AuthorizeWrite and the read filters.
Status Authorize(const Principal& p, const api::KindInfo& kind,
                 const std::optional<std::string>& ns, const std::optional<std::string>& name,
                 Verb verb);

// An object as any write takes it: a valid envelope, spec and (when present) status.
Status CheckObject(const nlohmann::json& obj);

// A warning as the value of an HTTP Warning header (RFC 7234, as Kubernetes sends them):
// 299 - "<text>", the text printable ASCII with quotes and backslashes escaped.
std::string WarningHeader(std::string_view text);
// Adds `warnings` to `r` as Warning headers the way kube-apiserver bounds them: repeats
// dropped; past kWarningTotalBytes in all, each cut to kWarningItemBytes and the rest left out;
// and at most kMaxWarningHeaders headers (HTTP clients refuse responses with over 100), the last
// saying how many were left out.
inline constexpr size_t kWarningTotalBytes = 4096;
inline constexpr size_t kWarningItemBytes = 256;
inline constexpr size_t kMaxWarningHeaders = 50;
void AddWarningHeaders(const std::vector<std::string>& warnings, HttpResponse* r);
// A pod subresource's `container` query parameter (kubectl -c): empty or the one container of
// `pod_view` (named `pod`), else an error naming it.
Status CheckContainerParam(const HttpRequest& req, const nlohmann::json& pod_view,
                           const std::string& pod);

// The stream protocol of a pods/exec or pods/attach request (`subresource`): v5.channel.k8s.io
// or v4.channel.k8s.io over a WebSocket, as kubectl 1.29 and later speak it; otherwise an error
// saying so, ending with `instead` (what else to use). Checked after the request's other
// checks, so that a client falling back to SPDY after a refusal hears the reason.
Result<std::string> StreamProtocol(const HttpRequest& req, std::string_view subresource,
                                   std::string_view instead);

// Whether a write asks only to be checked (dryRun=All in the query, or in a delete's
// DeleteOptions), as Kubernetes' dry run.
bool DryRun(const HttpRequest& req);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_API_COMMON_H_
