// The batched-copy kernel's block code (ops/cuda/batched_copy_block.h) run
// on the host, block by block and thread by thread as a GPU would run it,
// over plans made by plan_copies: every relative alignment (each picks its
// own word width), heads and tails, pieces over many blocks, zero fills.
// No GPU needed; built with CUDA (it uses CUDA's vector word types).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "ops/cuda/batched_copy.h"
#include "ops/cuda/batched_copy_block.h"
#include "ops/cuda/copy_plan.h"

namespace chorus {
namespace {

constexpr unsigned kThreads = 256;  // as the kernel's blocks

// Memory aligned as cudaMalloc's (16 bytes is all the words need).
class Arena {
 public:
  explicit Arena(size_t bytes) : words_((bytes + 15) / 16) {}
  char* data() { return reinterpret_cast<char*>(words_.data()); }
  size_t size() const { return words_.size() * 16; }
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out(size());
    std::memcpy(out.data(), words_.data(), size());
    return out;
  }
  void fill(std::mt19937& rng) {
    for (size_t i = 0; i < size(); ++i) data()[i] = static_cast<char>(rng());
  }

 private:
  std::vector<uint4> words_;
};

void run_on_host(const std::vector<DeviceOps::Copy>& copies) {
  std::vector<CopyLaunch> launches;
  const Status status = plan_copies(copies, cuda_copy_limits(), &launches);
  ASSERT_TRUE(status.ok()) << status.to_string();
  for (const CopyLaunch& launch : launches) {
    std::vector<uint32_t> first_blocks;
    for (const CopyPiece& piece : launch.pieces) first_blocks.push_back(piece.first_block);
    // Last block first: a launch's blocks run in any order on a GPU.
    for (uint32_t block = launch.blocks; block-- > 0;) {
      const uint32_t index = piece_of_block(first_blocks.data(), static_cast<uint32_t>(first_blocks.size()), block);
      const CopyPiece& piece = launch.pieces[index];
      ASSERT_LT(block - piece.first_block, (piece.bytes + kCopyBytesPerBlock - 1) / kCopyBytesPerBlock);
      for (unsigned thread = 0; thread < kThreads; ++thread) {
        copy_block(piece.to, piece.from, piece.bytes, block - piece.first_block, thread, kThreads);
      }
    }
  }
}

TEST(CudaBatchedCopy, EveryRelativeAlignmentCopiesExactlyItsBytes) {
  std::mt19937 rng(3);
  Arena source(80 << 10), target(80 << 10);
  source.fill(rng);
  for (size_t bytes : {size_t{1}, size_t{2}, size_t{3}, size_t{15}, size_t{16}, size_t{17}, size_t{33}, size_t{4099},
                       size_t{kCopyBytesPerBlock + 5}, size_t{70000}}) {
    const size_t offsets = bytes > 5000 ? 4 : 18;  // large pieces: fewer offsets, for time
    for (size_t from = 0; from < offsets; ++from) {
      for (size_t to = 0; to < offsets; ++to) {
        target.fill(rng);
        std::vector<uint8_t> expected = target.bytes();
        std::memcpy(&expected[to * 5], source.data() + from * 3, bytes);  // offsets 0..85: all residues mod 16
        run_on_host({{target.data() + to * 5, source.data() + from * 3, bytes}});
        ASSERT_EQ(target.bytes(), expected) << bytes << " bytes from +" << from * 3 << " to +" << to * 5;
      }
    }
  }
}

TEST(CudaBatchedCopy, ZeroFillsAnyRangeAndNothingAround) {
  std::mt19937 rng(4);
  Arena target(80 << 10);
  for (size_t bytes : {size_t{1}, size_t{7}, size_t{16}, size_t{31}, size_t{kCopyBytesPerBlock * 2 + 9}}) {
    for (size_t to = 0; to < 20; ++to) {
      target.fill(rng);
      std::vector<uint8_t> expected = target.bytes();
      std::memset(&expected[to], 0, bytes);
      run_on_host({{target.data() + to, nullptr, bytes}});
      ASSERT_EQ(target.bytes(), expected) << bytes << " bytes at +" << to;
    }
  }
}

// Several launches' worth of pieces of every size, some reading or
// overwriting what earlier ones wrote, against copying one by one in order.
TEST(CudaBatchedCopy, ALargeBatchMatchesCopyingInOrder) {
  std::mt19937 rng(5);
  constexpr size_t kArena = 1 << 20;
  Arena source(kArena), target(kArena);
  source.fill(rng);
  target.fill(rng);
  std::vector<uint8_t> expected = target.bytes();
  const std::vector<uint8_t> from_bytes = source.bytes();
  std::vector<DeviceOps::Copy> copies;
  for (int i = 0; i < 3000; ++i) {
    const size_t bytes = 1 + (i % 40 == 0 ? rng() % (100 << 10) : rng() % 600);
    const size_t to = rng() % (kArena - bytes);
    const size_t from = rng() % (kArena - bytes);
    const int kind = static_cast<int>(rng() % 10);
    if (kind == 0) {
      copies.push_back({target.data() + to, nullptr, bytes});
      std::memset(&expected[to], 0, bytes);
    } else if (kind == 1 && (from + bytes <= to || to + bytes <= from)) {
      copies.push_back({target.data() + to, target.data() + from, bytes});
      std::memcpy(&expected[to], &expected[from], bytes);
    } else {
      copies.push_back({target.data() + to, source.data() + from, bytes});
      std::memcpy(&expected[to], &from_bytes[from], bytes);
    }
  }
  run_on_host(copies);
  EXPECT_TRUE(target.bytes() == expected);
}

}  // namespace
}  // namespace chorus
