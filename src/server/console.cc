#include "server/console.h"

#include <string>
#include <string_view>

#include "server/console_assets.h"

namespace tessera::server {
namespace {

// Scripts, styles, images and connections from this origin only; no inline script or style, no
// framing (clickjacking), no form posted elsewhere. A token the page holds can thus reach no
// other origin, and no other origin's script can run in the page.
constexpr std::string_view kPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

std::string_view TypeOf(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

HttpResponse WithHeaders(HttpResponse r) {
  r.headers.emplace_back("Content-Security-Policy", std::string(kPolicy));
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("X-Frame-Options", "DENY");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  // A new binary may serve new scripts: the browser asks again each time.
  r.headers.emplace_back("Cache-Control", "no-cache");
  return r;
}

}  // namespace

std::optional<HttpResponse> ServeConsole(const HttpRequest& req) {
  if (req.path != "/ui" && !req.path.starts_with("/ui/")) return std::nullopt;
  HttpResponse r;
  if (req.method != "GET" && req.method != "HEAD") {
    r.status = 405;
    r.content_type = "text/plain";
    r.body = "the console's files are read with GET\n";
    r.headers.emplace_back("Allow", "GET, HEAD");
    return WithHeaders(std::move(r));
  }
  if (req.path == "/ui") {
    r.status = 308;
    r.content_type = "text/plain";
    r.body = "/ui/\n";
    r.headers.emplace_back("Location", "/ui/");
    return WithHeaders(std::move(r));
  }
  std::string_view name = std::string_view(req.path).substr(4);
  if (name.empty()) name = "index.html";
  for (const ConsoleAsset& a : ConsoleAssets()) {
    if (a.name != name) continue;
    r.content_type = std::string(TypeOf(name));
    if (req.method == "GET") r.body = std::string(a.bytes);
    return WithHeaders(std::move(r));
  }
  r.status = 404;
  r.content_type = "text/plain";
  r.body = "no such file in the console: " + std::string(name) + "\n";
  return WithHeaders(std::move(r));
}

}  // namespace tessera::server
