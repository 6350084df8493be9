#include "core/mig.h"

#include <gtest/gtest.h>

namespace tessera::core {
namespace {

std::vector<MigInstance> Layout(const MigGeometry& geo,
                                std::vector<std::pair<std::string, int>> at) {
  std::vector<MigInstance> out;
  for (const auto& [name, start] : at) {
    int p = geo.FindProfile(name);
    EXPECT_GE(p, 0) << name;
    out.push_back({static_cast<uint8_t>(p), static_cast<uint8_t>(start)});
  }
  return out;
}

TEST(MigCatalog, HasTheSixModelsWithTheirProfiles) {
  struct Row {
    const char* model;
    size_t profiles;
    int compute;
    int memory;
    const char* full;
  } rows[] = {
      {"A100-40GB", 7, 7, 8, "7g.40gb"}, {"A100-80GB", 7, 7, 8, "7g.80gb"},
      {"A30-24GB", 5, 4, 4, "4g.24gb"},  {"H100-80GB", 7, 7, 8, "7g.80gb"},
      {"H100-94GB", 7, 7, 8, "7g.94gb"}, {"H200-141GB", 7, 7, 8, "7g.141gb"},
  };
  EXPECT_EQ(MigCatalog().size(), 6u);
  for (const Row& r : rows) {
    const MigGeometry* g = FindMigGeometry(r.model);
    ASSERT_NE(g, nullptr) << r.model;
    EXPECT_EQ(g->profiles.size(), r.profiles) << r.model;
    EXPECT_EQ(g->compute_slices, r.compute) << r.model;
    EXPECT_EQ(g->memory_slices, r.memory) << r.model;
    EXPECT_GE(g->FindProfile(r.full), 0) << r.model;
    EXPECT_GE(g->FindProfile(std::string("mig-") + r.full), 0) << r.model;
  }
  EXPECT_EQ(FindMigGeometry("T4"), nullptr);
  EXPECT_EQ(FindMigGeometry("h100"), FindMigGeometry("H100-80GB"));
}

struct LayoutCase {
  const char* model;
  std::vector<std::pair<std::string, int>> at;
  const char* error;  // nullptr: legal
};

class MigLayoutTest : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(MigLayoutTest, Legality) {
  const LayoutCase& c = GetParam();
  const MigGeometry* geo = FindMigGeometry(c.model);
  ASSERT_NE(geo, nullptr);
  Status s = CheckMigLayout(*geo, Layout(*geo, c.at));
  if (c.error == nullptr) {
    EXPECT_TRUE(s.ok()) << s.message();
  } else {
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.error), std::string::npos) << s.message();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, MigLayoutTest,
    ::testing::Values(
        // Seven 1g slices fill slices 0..6.
        LayoutCase{"A100-40GB",
                   {{"1g.5gb", 0},
                    {"1g.5gb", 1},
                    {"1g.5gb", 2},
                    {"1g.5gb", 3},
                    {"1g.5gb", 4},
                    {"1g.5gb", 5},
                    {"1g.5gb", 6}},
                   nullptr},
        LayoutCase{"A100-40GB", {{"3g.20gb", 0}, {"3g.20gb", 4}}, nullptr},
        LayoutCase{"A100-40GB", {{"4g.20gb", 0}, {"3g.20gb", 4}}, nullptr},
        LayoutCase{
            "A100-40GB", {{"2g.10gb", 0}, {"2g.10gb", 2}, {"2g.10gb", 4}, {"1g.5gb", 6}}, nullptr},
        LayoutCase{"A100-80GB", {{"7g.80gb", 0}}, nullptr},
        LayoutCase{
            "H100-80GB", {{"1g.20gb", 0}, {"1g.20gb", 2}, {"1g.20gb", 4}, {"1g.20gb", 6}}, nullptr},
        LayoutCase{"A30-24GB", {{"2g.12gb", 0}, {"1g.6gb", 2}, {"1g.6gb", 3}}, nullptr},
        LayoutCase{"H200-141GB", {{"3g.71gb", 0}, {"2g.35gb", 4}, {"1g.18gb", 6}}, nullptr},
        // 1g profiles cannot use slice 7; 3g only starts at 0 or 4; 2g not at 6.
        LayoutCase{"A100-40GB", {{"1g.5gb", 7}}, "cannot start"},
        LayoutCase{"A100-40GB", {{"3g.20gb", 2}}, "cannot start"},
        LayoutCase{"H100-80GB", {{"2g.20gb", 6}}, "cannot start"},
        LayoutCase{"A30-24GB", {{"2g.12gb", 1}}, "cannot start"},
        LayoutCase{"A100-40GB", {{"4g.20gb", 0}, {"3g.20gb", 0}}, "overlaps"},
        LayoutCase{"A100-40GB", {{"7g.40gb", 0}, {"1g.5gb", 6}}, "overlaps"},
        LayoutCase{"H100-94GB", {{"1g.12gb+me", 0}, {"1g.12gb+me", 1}}, "more than 1"},
        LayoutCase{"A30-24GB", {{"4g.24gb", 0}, {"1g.6gb", 3}}, "overlaps"}));

TEST(PlaceMigLayout, AssignsLegalStarts) {
  const MigGeometry* geo = FindMigGeometry("A100-40GB");
  std::vector<std::pair<std::string, int>> want = {{"1g.5gb", 2}, {"2g.10gb", 1}, {"3g.20gb", 1}};
  Result<std::vector<MigInstance>> got = PlaceMigLayout(*geo, want);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->size(), 4u);
  EXPECT_TRUE(CheckMigLayout(*geo, *got).ok());
}

TEST(PlaceMigLayout, RejectsWhatCannotFit) {
  const MigGeometry* geo = FindMigGeometry("A100-40GB");
  struct Row {
    std::vector<std::pair<std::string, int>> counts;
    const char* error;
  } rows[] = {
      {{{"7g.40gb", 1}, {"1g.5gb", 1}}, "does not fit"},
      {{{"3g.20gb", 2}, {"1g.5gb", 1}}, "does not fit"},
      {{{"1g.5gb", 8}}, "at most 7"},
      {{{"9g.99gb", 1}}, "does not exist"},
  };
  for (const Row& r : rows) {
    auto got = PlaceMigLayout(*geo, r.counts);
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.status().message().find(r.error), std::string::npos) << got.status().message();
  }
}

TEST(MigInstance, SizesFollowTheGeometry) {
  const MigGeometry* h100 = FindMigGeometry("H100-80GB");
  auto milli = [&](const char* p) {
    return MigInstanceMilli(*h100, h100->profiles[h100->FindProfile(p)]);
  };
  EXPECT_EQ(milli("1g.10gb"), 143);  // 1/7 of compute, rounded up
  EXPECT_EQ(milli("1g.20gb"), 250);  // 2/8 of memory beats 1/7 of compute
  EXPECT_EQ(milli("3g.40gb"), 500);
  EXPECT_EQ(milli("7g.80gb"), 1000);
  EXPECT_EQ(MigInstanceMemoryMib(*h100, h100->profiles[h100->FindProfile("3g.40gb")], 81920),
            40960);
}

}  // namespace
}  // namespace tessera::core
