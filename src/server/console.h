// The web console at /ui: a page and its scripts, served to anyone (they hold no data), with a
// Content-Security-Policy that lets them load nothing and talk to nothing but this server. The
// data comes from the API with the token the user signs in with (src/ui/js/api.js), under the
// same rules as for every other client.
#ifndef TESSERA_SERVER_CONSOLE_H_
#define TESSERA_SERVER_CONSOLE_H_

#include <optional>

#include "server/http_server.h"

namespace tessera::server {

// The answer to a request for /ui or a path under it; nullopt for any other path.
std::optional<HttpResponse> ServeConsole(const HttpRequest& req);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_CONSOLE_H_
