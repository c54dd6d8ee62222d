// Random draws that are the same on every platform for the same seed.
// std::mt19937_64's sequence is fixed by the standard, but the standard
// distributions (uniform_real_distribution, uniform_int_distribution) are
// implementation-defined, so a search would sample other configurations
// under another standard library. The transforms here are written out.
#pragma once

#include <cstdint>
#include <random>

namespace chorus {
namespace tune {

// SplitMix64's finaliser: mixes a 64-bit value into a well-spread one.
uint64_t splitmix64(uint64_t x);

class PortableRandom {
 public:
  explicit PortableRandom(uint64_t seed) : engine_(seed) {}
  // The generator of trial `trial` of a search seeded with `seed`: each
  // trial's draws depend on (seed, trial) alone, not on the order in which
  // the scheduler created trials or on draws made for other trials.
  static PortableRandom for_trial(uint64_t seed, int64_t trial);

  uint64_t next_u64() { return engine_(); }
  // Uniform in [0, 1): the top 53 bits of one draw, scaled exactly.
  double uniform01();
  // Uniform integer in [0, n), n >= 1, unbiased (rejection of the draws
  // beyond the largest multiple of n).
  uint64_t below(uint64_t n);

 private:
  std::mt19937_64 engine_;
};

}  // namespace tune
}  // namespace chorus
