// The same harness as a libFuzzer target (clang -fsanitize=fuzzer; make fuzz-libfuzzer). A
// broken property aborts, which libFuzzer reports with the input.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::unique_ptr<tessera::fuzz::Target> target = [] {
    char tmpl[] = "/tmp/tessera-libfuzzer-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    return std::make_unique<tessera::fuzz::Target>(std::string(tmpl) + "/data");
  }();
  const tessera::Status s =
      target->Run(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!s.ok()) {
    std::fprintf(stderr, "property broken: %s\n", s.message().c_str());
    std::abort();
  }
  return 0;
}
