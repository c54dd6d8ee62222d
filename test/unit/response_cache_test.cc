#include "protocol/response_cache.h"

#include <gtest/gtest.h>

namespace chorus {
namespace {

Request request(const std::string& name, Shape shape = {4}, OpType op = OpType::kAllreduce) {
  Request q;
  q.name = name;
  q.op = op;
  q.shape = std::move(shape);
  return q;
}

Response response(const std::string& name, Response::Type type = Response::Type::kAllreduce) {
  Response p;
  p.name = name;
  p.type = type;
  p.elements = 4;
  return p;
}

TEST(ResponseCacheTest, MissHitAndChanged) {
  ResponseCache cache(4);
  uint32_t slot = 99;
  EXPECT_EQ(cache.lookup(request("a"), &slot), ResponseCache::Lookup::kMiss);
  auto put = cache.put(response("a"), request("a"));
  ASSERT_TRUE(put.has_value());
  EXPECT_EQ(*put, 0u);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.lookup(request("a"), &slot), ResponseCache::Lookup::kHit);
  EXPECT_EQ(slot, 0u);
  slot = 99;
  EXPECT_EQ(cache.lookup(request("a", {5}), &slot), ResponseCache::Lookup::kChanged);
  EXPECT_EQ(slot, 0u);
  Request other_dtype = request("a");
  other_dtype.dtype = DataType::kFloat64;
  EXPECT_EQ(cache.lookup(other_dtype, &slot), ResponseCache::Lookup::kChanged);
  EXPECT_EQ(cache.response(0).name, "a");
  EXPECT_TRUE(cache.occupied(0));
  EXPECT_FALSE(cache.occupied(1));
  EXPECT_FALSE(cache.occupied(4));
  EXPECT_EQ(cache.slot_of("a"), std::optional<uint32_t>(0));
  EXPECT_EQ(cache.slot_of("b"), std::nullopt);
}

// A hit's response takes the hitting request's name and copies the rest;
// the cached entry keeps its own.
TEST(ResponseCacheTest, AppendNamedCopiesTheEntryUnderTheGivenName) {
  ResponseCache cache(2);
  Response cached = response("model.layers.0.weight.grad");
  cached.group = "bucket";
  cached.first_dims = {1, 2};
  cached.prescale = 0.5;
  const uint32_t slot = *cache.put(cached, request(cached.name));
  std::vector<Response> appended(1);
  cache.append_named(slot, "model.layers.0.weight.grad", &appended);
  ASSERT_EQ(appended.size(), 2u);
  const Response& out = appended[1];
  EXPECT_EQ(out.name, "model.layers.0.weight.grad");
  EXPECT_EQ(out.type, cached.type);
  EXPECT_EQ(out.elements, cached.elements);
  EXPECT_EQ(out.group, "bucket");
  EXPECT_EQ(out.first_dims, cached.first_dims);
  EXPECT_EQ(out.prescale, 0.5);
  EXPECT_EQ(cache.response(slot).name, "model.layers.0.weight.grad");
  EXPECT_EQ(cache.response(slot).group, "bucket");
  EXPECT_EQ(cache.slot_of("model.layers.0.weight.grad"), std::optional<uint32_t>(slot));
}

TEST(ResponseCacheTest, AllgatherNeedsTheExactFirstDimension) {
  // The cached response carries every rank's first dimension, so a rank that
  // now brings another number of rows must renegotiate.
  ResponseCache cache(2);
  cache.put(response("g", Response::Type::kAllgather), request("g", {3, 2}, OpType::kAllgather));
  uint32_t slot = 0;
  EXPECT_EQ(cache.lookup(request("g", {3, 2}, OpType::kAllgather), &slot),
            ResponseCache::Lookup::kHit);
  EXPECT_EQ(cache.lookup(request("g", {4, 2}, OpType::kAllgather), &slot),
            ResponseCache::Lookup::kChanged);
}

TEST(ResponseCacheTest, EntryWithoutLocalRequestIsChanged) {
  // A joined rank caches allreduces it did not request.
  ResponseCache cache(2);
  cache.put(response("a"), std::nullopt);
  uint32_t slot = 7;
  EXPECT_EQ(cache.lookup(request("a"), &slot), ResponseCache::Lookup::kChanged);
  EXPECT_EQ(slot, 0u);
}

TEST(ResponseCacheTest, EvictsLeastRecentlyUsed) {
  ResponseCache cache(3);
  cache.put(response("a"), request("a"));  // slot 0
  cache.put(response("b"), request("b"));  // slot 1
  cache.put(response("c"), request("c"));  // slot 2
  cache.touch(0);                          // order now: a c b (b least recent)
  auto slot = cache.put(response("d"), request("d"));
  EXPECT_EQ(slot, std::optional<uint32_t>(1));
  EXPECT_EQ(cache.slot_of("b"), std::nullopt);
  EXPECT_EQ(cache.size(), 3u);
  // c is now the least recently used.
  EXPECT_EQ(cache.put(response("e"), request("e")), std::optional<uint32_t>(2));
  EXPECT_EQ(cache.slot_of("c"), std::nullopt);
  EXPECT_TRUE(cache.slot_of("a").has_value());
}

TEST(ResponseCacheTest, ReplacingKeepsTheSlotAndRefreshes) {
  ResponseCache cache(2);
  cache.put(response("a"), request("a"));
  cache.put(response("b"), request("b"));
  Response bigger = response("a");
  bigger.elements = 8;
  EXPECT_EQ(cache.put(bigger, request("a", {8})), std::optional<uint32_t>(0));
  EXPECT_EQ(cache.response(0).elements, 8);
  uint32_t slot = 0;
  EXPECT_EQ(cache.lookup(request("a", {8}), &slot), ResponseCache::Lookup::kHit);
  // a was refreshed, so b goes first.
  EXPECT_EQ(cache.put(response("c"), request("c")), std::optional<uint32_t>(1));
  EXPECT_TRUE(cache.slot_of("a").has_value());
}

TEST(ResponseCacheTest, EvictReusesLowestFreeSlot) {
  ResponseCache cache(4);
  for (const char* n : {"a", "b", "c", "d"}) cache.put(response(n), request(n));
  cache.evict(2);
  cache.evict(0);
  cache.evict(0);  // already free: no effect
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_FALSE(cache.occupied(0));
  EXPECT_EQ(cache.put(response("e"), request("e")), std::optional<uint32_t>(0));
  EXPECT_EQ(cache.put(response("f"), request("f")), std::optional<uint32_t>(2));
  uint32_t slot = 0;
  EXPECT_EQ(cache.lookup(request("a"), &slot), ResponseCache::Lookup::kMiss);
}

TEST(ResponseCacheTest, CapacityZeroCachesNothing) {
  ResponseCache cache(0);
  EXPECT_EQ(cache.put(response("a"), request("a")), std::nullopt);
  uint32_t slot = 0;
  EXPECT_EQ(cache.lookup(request("a"), &slot), ResponseCache::Lookup::kMiss);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(cache.occupied(0));
}

TEST(ResponseCacheTest, IdenticalOperationsGiveIdenticalSlots) {
  // The fast path depends on every rank reaching the same slots; only the
  // local requests differ between ranks.
  ResponseCache x(5), y(5);
  for (int i = 0; i < 40; ++i) {
    const std::string name = "t" + std::to_string((i * 7) % 11);
    auto sx = x.put(response(name), request(name));
    auto sy = y.put(response(name), i % 3 ? std::optional<Request>() : request(name, {i}));
    ASSERT_EQ(sx, sy);
    if (i % 4 == 0) {
      x.touch(*sx / 2);
      y.touch(*sy / 2);
    }
    if (i % 9 == 0) {
      x.evict(1);
      y.evict(1);
    }
  }
  for (uint32_t s = 0; s < 5; ++s) {
    ASSERT_EQ(x.occupied(s), y.occupied(s));
    if (x.occupied(s)) {
      EXPECT_EQ(x.response(s).name, y.response(s).name);
    }
  }
}

}  // namespace
}  // namespace chorus
