// A second preloaded library that looks up the next getpid with dlsym(RTLD_NEXT), as
// interposers do. Preloaded after libtessera-share.so, it checks that RTLD_NEXT keeps its
// meaning through the interposed dlsym: resolved from this library's place, not from the
// interposer's (where "next" would be this very getpid, and the call would recurse forever).
#include <dlfcn.h>
#include <sys/types.h>

extern "C" __attribute__((visibility("default"))) pid_t getpid(void) {
  static pid_t (*next)(void) = nullptr;
  if (next == nullptr) next = reinterpret_cast<pid_t (*)(void)>(dlsym(RTLD_NEXT, "getpid"));
  return next != nullptr ? next() : -1;
}
