// The search space: sampling within bounds, log scales, repeatability with a
// seed, and clear errors for a bad space.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "chorus/status.h"
#include "chorus/tune/portable_random.h"
#include "chorus/tune/search_space.h"

namespace chorus {
namespace tune {
namespace {

SearchSpace mnist_like_space() {
  SearchSpace space;
  space.add_log_uniform("lr", 1e-4, 1.0)
      .add_uniform("momentum", 0.0, 0.99)
      .add_int("width", 16, 512, /*log=*/true)
      .add_int("layers", 1, 4)
      .add_choice("batch", {32, 64, 128})
      .add_choice("activation", {"relu", "tanh"});
  return space;
}

TEST(PortableRandom, FirstDrawsAreFixedByTheStandard) {
  // std::mt19937_64 with the default seed: the 10000th draw is specified by
  // the standard as 9981545732273789042.
  PortableRandom rng(5489u);
  uint64_t x = 0;
  for (int i = 0; i < 10000; ++i) x = rng.next_u64();
  EXPECT_EQ(x, 9981545732273789042ULL);
}

TEST(PortableRandom, TransformsAreTheDocumentedArithmetic) {
  PortableRandom a(42), b(42);
  const uint64_t raw = b.next_u64();
  EXPECT_EQ(a.uniform01(), static_cast<double>(raw >> 11) / 9007199254740992.0);
  for (int i = 0; i < 1000; ++i) {
    const double u = a.uniform01();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    EXPECT_LT(a.below(7), 7u);
  }
  EXPECT_EQ(a.below(1), 0u);
}

TEST(SearchSpace, SamplesLieWithinTheirBounds) {
  const SearchSpace space = mnist_like_space();
  for (int64_t t = 0; t < 2000; ++t) {
    const Config c = space.sample(7, t);
    EXPECT_NO_THROW(space.check(c));
    EXPECT_GE(c.get_double("lr"), 1e-4);
    EXPECT_LT(c.get_double("lr"), 1.0);
    EXPECT_GE(c.get_int("width"), 16);
    EXPECT_LE(c.get_int("width"), 512);
    EXPECT_GE(c.get_int("layers"), 1);
    EXPECT_LE(c.get_int("layers"), 4);
    const int64_t batch = c.get_int("batch");
    EXPECT_TRUE(batch == 32 || batch == 64 || batch == 128);
  }
}

TEST(SearchSpace, LogScaleSpreadsOverDecades) {
  SearchSpace space;
  space.add_log_uniform("lr", 1e-4, 1.0);
  // Each of the four decades gets about a quarter of the draws; a uniform
  // scale would put 90% into the last one.
  std::map<int, int> decade;
  const int n = 8000;
  double sum_log = 0;
  for (int64_t t = 0; t < n; ++t) {
    const double lr = space.sample(1, t).get_double("lr");
    ++decade[static_cast<int>(std::floor(std::log10(lr)))];
    sum_log += std::log10(lr);
  }
  for (int d = -4; d <= -1; ++d) EXPECT_NEAR(decade[d], n / 4, n / 4 * 0.12) << "decade 1e" << d;
  EXPECT_NEAR(sum_log / n, -2.0, 0.05);
}

TEST(SearchSpace, IntegersCoverTheInclusiveRangeEvenly) {
  SearchSpace space;
  space.add_int("k", -2, 2);
  std::map<int64_t, int> count;
  for (int64_t t = 0; t < 5000; ++t) ++count[space.sample(3, t).get_int("k")];
  ASSERT_EQ(count.size(), 5u);
  for (const auto& [k, c] : count) EXPECT_NEAR(c, 1000, 120) << "k=" << k;
}

TEST(SearchSpace, SameSeedSameConfigurationsOtherSeedOthers) {
  const SearchSpace space = mnist_like_space();
  int differ = 0;
  for (int64_t t = 0; t < 50; ++t) {
    EXPECT_EQ(space.sample(11, t).to_json(), space.sample(11, t).to_json());
    if (space.sample(11, t).to_json() != space.sample(12, t).to_json()) ++differ;
  }
  EXPECT_EQ(differ, 50);
  // A trial's configuration does not depend on which trials were sampled before.
  const Config late = space.sample(11, 40);
  EXPECT_EQ(space.sample(11, 40).to_json(), late.to_json());
}

// Pinned values: a change of transform (or of standard library) that moves
// the configurations a seed gives shows up here.
TEST(SearchSpace, PinnedIntegerAndChoiceDraws) {
  SearchSpace space;
  space.add_int("k", 0, 1000000).add_choice("c", {"a", "b", "c", "d", "e"});
  PortableRandom rng = PortableRandom::for_trial(2024, 3);
  const uint64_t k = rng.below(1000001);
  const uint64_t c = rng.below(5);
  const Config config = space.sample(2024, 3);
  EXPECT_EQ(config.get_int("k"), static_cast<int64_t>(k));
  EXPECT_EQ(config.get_string("c"), std::string(1, static_cast<char>('a' + c)));
}

std::string error_of(void (*define)(SearchSpace&)) {
  SearchSpace space;
  try {
    define(space);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    return e.what();
  }
  return "accepted";
}

TEST(SearchSpace, BadSpacesAreClearErrors) {
  EXPECT_EQ(error_of([](SearchSpace& s) { s.add_uniform("lr", 0.5, 0.5); }),
            "hyperparameter 'lr': low must be below high, got low 0.5, high 0.5");
  EXPECT_EQ(error_of([](SearchSpace& s) { s.add_uniform("lr", 1, 0); }),
            "hyperparameter 'lr': low must be below high, got low 1, high 0");
  EXPECT_EQ(error_of([](SearchSpace& s) { s.add_uniform("lr", 0, INFINITY); }),
            "hyperparameter 'lr': bounds must be finite, got [0, inf)");
  EXPECT_EQ(error_of([](SearchSpace& s) { s.add_log_uniform("lr", 0, 1); }),
            "hyperparameter 'lr': a log scale needs low > 0, got low 0");
  EXPECT_EQ(error_of([](SearchSpace& s) { s.add_int("w", 8, 8); }),
            "hyperparameter 'w': low must be below high, got low 8, high 8 (a single value is a choice of one)");
  EXPECT_EQ(error_of([](SearchSpace& s) { s.add_int("w", -1, 8, true); }),
            "hyperparameter 'w': a log scale needs low > 0, got low -1");
  EXPECT_EQ(error_of([](SearchSpace& s) { s.add_choice("act", {}); }),
            "hyperparameter 'act': a choice needs at least one value, got none");
  EXPECT_EQ(error_of([](SearchSpace& s) { s.add_choice("act", {"relu", "relu"}); }),
            "hyperparameter 'act': choice relu is listed twice");
  EXPECT_EQ(error_of([](SearchSpace& s) { s.add_uniform("lr", 0, 1).add_int("lr", 1, 2); }),
            "hyperparameter 'lr' is defined twice");
  EXPECT_EQ(error_of([](SearchSpace& s) { s.add_uniform("", 0, 1); }),
            "a hyperparameter needs a name (got an empty one)");
}

TEST(SearchSpace, CheckNamesTheValueOutsideTheSpace) {
  SearchSpace space;
  space.add_int("w", 1, 4);
  Config c;
  c.set("w", int64_t{9});
  try {
    space.check(c);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "hyperparameter 'w' = 9 lies outside its space {\"name\":\"w\",\"type\":\"int\",\"low\":1,\"high\":4,\"log\":false}");
  }
  EXPECT_THROW(c.get_double("missing"), Error);
  EXPECT_THROW(c.get_string("w"), Error);
}

}  // namespace
}  // namespace tune
}  // namespace chorus
