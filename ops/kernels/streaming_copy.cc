#include "ops/kernels/streaming_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace chorus {

#if defined(__SSE2__)

void copy_streaming(void* to, const void* from, size_t bytes) {
  auto* out = static_cast<char*>(to);
  const auto* in = static_cast<const char*>(from);
  // Streaming stores need 16-byte aligned targets: copy the head plainly.
  const size_t misaligned = reinterpret_cast<uintptr_t>(out) & 15;
  if (misaligned != 0) {
    const size_t head = bytes < 16 - misaligned ? bytes : 16 - misaligned;
    std::memcpy(out, in, head);
    out += head;
    in += head;
    bytes -= head;
  }
  // Whole 64-byte lines per iteration, so the write-combining buffer flushes
  // full lines.
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 48), d);
  }
  if (i < bytes) std::memcpy(out + i, in + i, bytes - i);
}

void streaming_stores_done() { _mm_sfence(); }

#else

void copy_streaming(void* to, const void* from, size_t bytes) { std::memcpy(to, from, bytes); }

void streaming_stores_done() {}

#endif

}  // namespace chorus
