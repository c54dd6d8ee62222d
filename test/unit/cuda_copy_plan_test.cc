// How CudaDevice::copy cuts a batch into batched-copy launches
// (ops/cuda/copy_plan.h): host code, tested with or without a GPU. The
// pieces of one launch run at once, so a launch must never hold two pieces
// of which one depends on the other; launches run in order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "ops/cuda/copy_plan.h"

namespace chorus {
namespace {

using Copy = DeviceOps::Copy;

constexpr CopyLimits kLimits{4, 100};

std::vector<CopyLaunch> plan(const std::vector<Copy>& copies, CopyLimits limits = kLimits) {
  std::vector<CopyLaunch> launches;
  const Status status = plan_copies(copies, limits, &launches);
  EXPECT_TRUE(status.ok()) << status.to_string();
  return launches;
}

TEST(CudaCopyPlan, PackingIsOneLaunchWithABlockRangePerPiece) {
  std::vector<char> tensors(1000), buffer(1000);
  const std::vector<Copy> copies{{&buffer[0], &tensors[0], 250},   // 3 blocks of 100
                                 {&buffer[250], nullptr, 100},     // a zero fill: 1 block
                                 {&buffer[350], &tensors[500], 1}};
  const std::vector<CopyLaunch> launches = plan(copies);
  ASSERT_EQ(launches.size(), 1u);
  const CopyLaunch& launch = launches[0];
  ASSERT_EQ(launch.pieces.size(), 3u);
  EXPECT_EQ(launch.blocks, 5u);
  EXPECT_EQ(launch.pieces[0].first_block, 0u);
  EXPECT_EQ(launch.pieces[1].first_block, 3u);
  EXPECT_EQ(launch.pieces[1].from, nullptr);
  EXPECT_EQ(launch.pieces[2].first_block, 4u);
  EXPECT_EQ(launch.pieces[2].to, &buffer[350]);
  EXPECT_EQ(launch.pieces[2].from, &tensors[500]);
  EXPECT_EQ(launch.pieces[2].bytes, 1u);
}

TEST(CudaCopyPlan, DropsWhatHasNothingToDo) {
  std::vector<char> a(64), b(64);
  EXPECT_TRUE(plan({}).empty());
  EXPECT_TRUE(plan({{a.data(), b.data(), 0}, {a.data(), a.data(), 64}, {nullptr, b.data(), 0}}).empty());
}

TEST(CudaCopyPlan, APieceThatDependsOnAnEarlierOneStartsTheNextLaunch) {
  std::vector<char> a(64), b(64), c(64), d(64);
  // Read after write: the contract's example, zeros then copied on.
  EXPECT_EQ(plan({{b.data(), nullptr, 8}, {c.data() + 8, b.data(), 8}}).size(), 2u);
  // Write after read, and write after write (partly overlapping).
  EXPECT_EQ(plan({{c.data(), a.data(), 16}, {a.data() + 15, d.data(), 4}}).size(), 2u);
  EXPECT_EQ(plan({{c.data(), a.data(), 16}, {c.data() + 8, d.data(), 16}}).size(), 2u);
  // Reading one source twice, and touching neighbouring bytes, conflict with nothing.
  EXPECT_EQ(plan({{c.data(), a.data(), 16}, {d.data(), a.data(), 16}, {c.data() + 16, a.data() + 16, 8}}).size(), 1u);
}

TEST(CudaCopyPlan, ALaunchHoldsAtMostItsCapacity) {
  std::vector<char> from(100), to(100);
  std::vector<Copy> copies;
  for (int i = 0; i < 10; ++i) copies.push_back({&to[i * 10], &from[i * 10], 10});
  const std::vector<CopyLaunch> launches = plan(copies);
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].pieces.size(), 4u);
  EXPECT_EQ(launches[1].pieces.size(), 4u);
  EXPECT_EQ(launches[2].pieces.size(), 2u);
  EXPECT_EQ(launches[2].pieces[0].first_block, 0u);
  EXPECT_EQ(launches[2].pieces[1].to, &to[90]);
}

TEST(CudaCopyPlan, RefusesANullDestinationAndAPieceOverlappingItself) {
  std::vector<char> a(64), b(64);
  std::vector<CopyLaunch> launches;
  Status status = plan_copies({{b.data(), a.data(), 8}, {nullptr, a.data(), 8}}, kLimits, &launches);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "copy: a null destination for 8 bytes");
  EXPECT_TRUE(launches.empty());
  status = plan_copies({{a.data() + 4, a.data(), 8}}, kLimits, &launches);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("overlap (4 bytes apart)"), std::string::npos) << status.message();
}

// Running each launch's pieces in reverse order (as a GPU may) must give
// what running the batch in order gives, for random batches over a small
// arena where pieces often read and write each other's bytes.
TEST(CudaCopyPlan, LaunchesInAnyInnerOrderMatchTheBatchInOrder) {
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    std::vector<char> expected(512);
    for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<char>(rng());
    std::vector<char> actual = expected;
    std::vector<Copy> copies;  // over `expected`, replayed on `actual` by offset
    const int pieces = 1 + static_cast<int>(rng() % 12);
    for (int p = 0; p < pieces; ++p) {
      const size_t bytes = 1 + rng() % 64;
      const size_t to = rng() % (expected.size() - bytes);
      size_t from = rng() % (expected.size() - bytes);
      if (from != to && std::max(from, to) - std::min(from, to) < bytes) from = to;  // no self-overlap
      const bool zeros = rng() % 5 == 0;
      copies.push_back({&expected[to], zeros ? nullptr : &expected[from], bytes});
    }
    std::vector<CopyLaunch> launches;
    ASSERT_TRUE(plan_copies(copies, CopyLimits{8, 16}, &launches).ok());
    for (const Copy& c : copies) {
      if (c.from == nullptr) {
        std::memset(c.to, 0, c.bytes);
      } else if (c.from != c.to) {
        std::memmove(c.to, c.from, c.bytes);
      }
    }
    const auto rebase = [&](const char* p) { return p == nullptr ? nullptr : actual.data() + (p - expected.data()); };
    for (const CopyLaunch& launch : launches) {
      for (auto piece = launch.pieces.rbegin(); piece != launch.pieces.rend(); ++piece) {
        char* to = rebase(piece->to);
        if (piece->from == nullptr) {
          std::memset(to, 0, piece->bytes);
        } else {
          std::memcpy(to, rebase(piece->from), piece->bytes);
        }
      }
    }
    ASSERT_EQ(actual, expected) << "round " << round;
  }
}

}  // namespace
}  // namespace chorus
