// The web console's files (src/ui, and the chart library from Debian's libjs-dygraphs), built
// into the binary by cmake/embed_assets.cmake: nothing is fetched when the console runs.
#ifndef TESSERA_SERVER_CONSOLE_ASSETS_H_
#define TESSERA_SERVER_CONSOLE_ASSETS_H_

#include <span>
#include <string_view>

namespace tessera::server {

struct ConsoleAsset {
  std::string_view name;  // its path under /ui/, e.g. "js/gpumap.js"
  std::string_view bytes;
};

std::span<const ConsoleAsset> ConsoleAssets();

}  // namespace tessera::server

#endif  // TESSERA_SERVER_CONSOLE_ASSETS_H_
