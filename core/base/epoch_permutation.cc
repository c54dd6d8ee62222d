#include "chorus/epoch_permutation.h"

#include <random>
#include <string>
#include <utility>

#include "chorus/status.h"

namespace chorus {
namespace {

// SplitMix64's finaliser: spreads (seed, epoch) pairs that differ in one bit
// over the whole 64-bit seed space of the generator.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, bound) by rejection: values below 2^64 mod bound would make
// small results more likely.
uint64_t uniform_below(std::mt19937_64& generator, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const uint64_t r = generator();
    if (r >= threshold) return r % bound;
  }
}

}  // namespace

std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  if (n < 0) {
    throw Error(Status::InvalidArgument("epoch_permutation: n = " + std::to_string(n) +
                                        " is negative; expected the number of samples (>= 0)"));
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  std::mt19937_64 generator(mix(seed ^ mix(static_cast<uint64_t>(epoch))));
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(uniform_below(generator, static_cast<uint64_t>(i) + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

}  // namespace chorus
