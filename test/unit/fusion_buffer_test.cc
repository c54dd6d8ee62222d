#include "runtime/fusion_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/kernels/host_device.h"

namespace chorus {
namespace {

// The buffer in host memory; get() must succeed.
void* get(FusionBuffer& buffer, size_t bytes) {
  static HostDevice host;
  void* p = nullptr;
  const Status status = buffer.get(&host, bytes, &p);
  EXPECT_TRUE(status.ok()) << status.to_string();
  return p;
}

bool aligned_64(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

// Writes and reads back every byte of [p, p + bytes): under a sanitizer this
// also proves the whole range is really owned by the buffer.
void fill_and_check(void* p, size_t bytes, unsigned char value) {
  std::memset(p, value, bytes);
  const auto* bytes_p = static_cast<const unsigned char*>(p);
  size_t mismatches = 0;
  for (size_t i = 0; i < bytes; ++i) mismatches += bytes_p[i] != value;
  EXPECT_EQ(mismatches, 0u);
}

TEST(FusionBufferTest, FreshBufferHasNoCapacity) {
  FusionBuffer buffer;
  EXPECT_EQ(buffer.capacity(), 0u);
}

TEST(FusionBufferTest, GetReturnsAlignedMemoryOfAtLeastTheRequestedSize) {
  for (size_t bytes : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{100}, size_t{4096},
                       size_t{1} << 20, (size_t{1} << 20) + 3}) {
    FusionBuffer buffer;
    void* p = get(buffer, bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_TRUE(aligned_64(p)) << bytes;
    EXPECT_GE(buffer.capacity(), bytes);
    fill_and_check(p, buffer.capacity(), 0x5a);
  }
}

TEST(FusionBufferTest, SmallerOrEqualRequestsReuseTheSameMemory) {
  FusionBuffer buffer;
  void* first = get(buffer, 1000);
  ASSERT_NE(first, nullptr);
  const size_t capacity = buffer.capacity();
  ASSERT_GE(capacity, 1000u);
  fill_and_check(first, 1000, 0x11);

  for (size_t bytes : {size_t{1}, size_t{64}, size_t{999}, size_t{1000}, capacity}) {
    EXPECT_EQ(get(buffer, bytes), first) << bytes;
    EXPECT_EQ(buffer.capacity(), capacity) << bytes;
  }
}

TEST(FusionBufferTest, LargerRequestsGrowTheBuffer) {
  FusionBuffer buffer;
  (void)get(buffer, 256);
  const size_t small = buffer.capacity();
  ASSERT_GE(small, 256u);

  const size_t larger = small + 1;
  void* grown = get(buffer, larger);
  ASSERT_NE(grown, nullptr);
  EXPECT_TRUE(aligned_64(grown));
  EXPECT_GE(buffer.capacity(), larger);
  fill_and_check(grown, buffer.capacity(), 0x22);
  // The grown memory is then reused for anything up to its capacity.
  EXPECT_EQ(get(buffer, larger), grown);
  EXPECT_EQ(get(buffer, small), grown);

  const size_t much_larger = 10 * 1024 * 1024 + 7;
  void* big = get(buffer, much_larger);
  ASSERT_NE(big, nullptr);
  EXPECT_TRUE(aligned_64(big));
  EXPECT_GE(buffer.capacity(), much_larger);
  fill_and_check(big, much_larger, 0x33);
  EXPECT_EQ(get(buffer, much_larger), big);
}

TEST(FusionBufferTest, CapacityNeverShrinksOverAGrowingSequence) {
  FusionBuffer buffer;
  size_t previous = 0;
  std::vector<size_t> requests;
  for (size_t bytes = 100; bytes < 200000; bytes = bytes * 3 / 2 + 1) requests.push_back(bytes);
  // Interleave smaller requests, as cycles with fewer tensors would make.
  for (size_t bytes : requests) {
    for (size_t request : {bytes, bytes / 2}) {
      void* p = get(buffer, request);
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(aligned_64(p)) << request;
      EXPECT_GE(buffer.capacity(), request);
      EXPECT_GE(buffer.capacity(), previous);
      previous = buffer.capacity();
      fill_and_check(p, request, static_cast<unsigned char>(request));
    }
  }
}

}  // namespace
}  // namespace chorus
