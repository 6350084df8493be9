// A few thousand mutated inputs through every reader of untrusted text, in make test.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "api/json_text.h"
#include "fuzz/harness.h"

namespace tessera::fuzz {
namespace {

TEST(Fuzz, MutatedManifestsJobsAndStatusesNeitherCrashNorWritePartially) {
  char tmpl[] = "/tmp/tessera-fuzz-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::vector<std::string> corpus = Corpus(TESSERA_TEST_DATA_DIR "/seeds");
  ASSERT_GT(corpus.size(), 10u);
  {
    Target target(std::string(tmpl) + "/data");
    // The corpus itself first: valid inputs must pass too.
    for (const std::string& input : corpus) {
      const Status s = target.Run(input);
      ASSERT_TRUE(s.ok()) << s.message() << "\ninput: " << api::SafeText(input, 300);
    }
    Mutator mutator(20261123, corpus);
    constexpr int kInputs = 20'000;
    for (int i = 0; i < kInputs; ++i) {
      const std::string input = mutator.Next();
      const Status s = target.Run(input);
      ASSERT_TRUE(s.ok()) << "input " << i << ": " << s.message()
                          << "\ninput: " << api::SafeText(input, 300);
    }
    // The mutations keep enough structure to get past the parsers into the store and the loop.
    EXPECT_GT(target.accepted(), 100u);
    EXPECT_GT(target.cycles(), 1000u);
  }
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace tessera::fuzz
