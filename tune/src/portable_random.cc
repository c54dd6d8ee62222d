#include "chorus/tune/portable_random.h"

namespace chorus {
namespace tune {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

PortableRandom PortableRandom::for_trial(uint64_t seed, int64_t trial) {
  return PortableRandom(splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(trial)));
}

double PortableRandom::uniform01() {
  return static_cast<double>(engine_() >> 11) * (1.0 / 9007199254740992.0);  // 2^-53
}

uint64_t PortableRandom::below(uint64_t n) {
  if (n <= 1) return 0;
  while (true) {
    const uint64_t x = engine_();
    const uint64_t r = x % n;
    // Accept when x lies in a whole block of n values: x - r + (n - 1) does
    // not pass 2^64 - 1.
    if (x - r <= UINT64_MAX - (n - 1)) return r;
  }
}

}  // namespace tune
}  // namespace chorus
