// Writing the files the control plane keeps beside its state (tokens, keys, client configs).
#ifndef TESSERA_SERVER_FILES_H_
#define TESSERA_SERVER_FILES_H_

#include <sys/types.h>

#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera::server {

// Replaces `path` with `text`, created with `mode` (0600: its owner only), all or nothing: the
// text goes to a temporary file beside it, is synced, then renamed over `path`.
Status WriteFileDurably(const std::string& path, std::string_view text, mode_t mode);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_FILES_H_
