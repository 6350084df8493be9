// `tessera_fuzz [--seconds N] [--seed S]`: the fuzz harness for longer runs (make fuzz). Prints
// the first input that breaks a property, with the property, and exits 1; a crash ends it with
// the signal, the input kept in ./fuzz-last-input.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "fuzz/harness.h"

int main(int argc, char** argv) {
  int64_t seconds = 300;
  uint64_t seed =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::string seeds_dir = TESSERA_TEST_DATA_DIR "/seeds";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--seed") == 0) seed = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--seeds-dir") == 0) seeds_dir = argv[i + 1];
  }
  char tmpl[] = "/tmp/tessera-fuzz-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 2;
  std::cout << "seed " << seed << ", " << seconds << " s" << std::endl;
  int64_t runs = 0;
  int code = 0;
  uint64_t accepted = 0, cycles = 0;
  {
    tessera::fuzz::Target target(std::string(tmpl) + "/data");
    tessera::fuzz::Mutator mutator(seed, tessera::fuzz::Corpus(seeds_dir));
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < end) {
      const std::string input = mutator.Next();
      std::ofstream("fuzz-last-input", std::ios::binary | std::ios::trunc) << input;
      const auto started = std::chrono::steady_clock::now();
      const tessera::Status s = target.Run(input);
      ++runs;
      const auto took = std::chrono::steady_clock::now() - started;
      if (took > std::chrono::milliseconds(500)) {
        // Slow inputs are kept too: a bound that does not hold shows as time before memory.
        const std::string name = "fuzz-slow-" + std::to_string(runs);
        std::ofstream(name, std::ios::binary) << input;
        std::cout << name << ": "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms"
                  << std::endl;
      }
      if (!s.ok()) {
        std::cout << "input " << runs << " (kept in fuzz-last-input): " << s.message() << std::endl;
        code = 1;
        break;
      }
    }
    accepted = target.accepted();
    cycles = target.cycles();
  }
  std::filesystem::remove_all(tmpl);
  if (code == 0) std::filesystem::remove("fuzz-last-input");
  std::cout << runs << " inputs (" << accepted << " requests accepted, " << cycles
            << " scheduling cycles)" << (code == 0 ? ", no property broken" : "") << std::endl;
  return code;
}
