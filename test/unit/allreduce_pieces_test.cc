// pieces_overlap(): which layouts of a fused message's tensors share memory.
// The reference is the layout itself: views into one array at known element
// offsets, so whether two byte ranges meet is known by construction.
#include <gtest/gtest.h>

#include <vector>

#include "contracts/backend.h"

namespace chorus {
namespace {

class PiecesOverlap : public ::testing::Test {
 protected:
  // A piece reading and writing elements [begin, begin + count) of memory_.
  AllreducePiece in_place(int64_t begin, int64_t count) { return {at(begin), at(begin), count}; }
  AllreducePiece out_of_place(int64_t in, int64_t out, int64_t count) { return {at(in), at(out), count}; }
  float* at(int64_t element) { return memory_.data() + element; }

  std::vector<float> memory_ = std::vector<float>(1000);
};

TEST_F(PiecesOverlap, DisjointAndTouchingPiecesDoNotOverlap) {
  EXPECT_FALSE(pieces_overlap({}, sizeof(float)));
  EXPECT_FALSE(pieces_overlap({in_place(0, 100)}, sizeof(float)));
  // Back to back, in either order: one ends where the next begins.
  EXPECT_FALSE(pieces_overlap({in_place(0, 100), in_place(100, 50), in_place(150, 1)}, sizeof(float)));
  EXPECT_FALSE(pieces_overlap({in_place(150, 1), in_place(100, 50), in_place(0, 100)}, sizeof(float)));
  // Out of place, inputs and outputs all apart.
  EXPECT_FALSE(pieces_overlap({out_of_place(0, 500, 100), out_of_place(100, 600, 100)}, sizeof(float)));
}

TEST_F(PiecesOverlap, SharedMemoryBetweenPiecesOverlaps) {
  // The same tensor twice.
  EXPECT_TRUE(pieces_overlap({in_place(0, 100), in_place(0, 100)}, sizeof(float)));
  // Views sharing one element, listed in either order.
  EXPECT_TRUE(pieces_overlap({in_place(0, 100), in_place(99, 10)}, sizeof(float)));
  EXPECT_TRUE(pieces_overlap({in_place(99, 10), in_place(0, 100)}, sizeof(float)));
  // One piece's output is another's input.
  EXPECT_TRUE(pieces_overlap({out_of_place(0, 200, 100), out_of_place(200, 400, 100)}, sizeof(float)));
  // A small piece inside a large one that ends before a third begins.
  EXPECT_TRUE(pieces_overlap({in_place(0, 300), in_place(400, 10), in_place(50, 10)}, sizeof(float)));
  // A piece whose own input and output overlap without being equal.
  EXPECT_TRUE(pieces_overlap({out_of_place(0, 50, 100)}, sizeof(float)));
}

TEST_F(PiecesOverlap, RangesAreCountTimesElementBytes) {
  // Two 2-element pieces 2 bytes apart: disjoint as bytes, overlapping as floats.
  char bytes[16] = {};
  const AllreducePiece first{bytes, bytes, 2};
  const AllreducePiece second{bytes + 2, bytes + 2, 2};
  EXPECT_FALSE(pieces_overlap({first, second}, 1));
  EXPECT_TRUE(pieces_overlap({first, second}, 4));
}

TEST_F(PiecesOverlap, EmptyPiecesAndPlaceholdersAreSkipped) {
  // Zero elements occupy no memory, wherever they point.
  EXPECT_FALSE(pieces_overlap({in_place(0, 100), in_place(50, 0)}, sizeof(float)));
  // Null placeholders (a joined rank's missing tensors) are not memory.
  EXPECT_FALSE(pieces_overlap({{nullptr, nullptr, 100}, {nullptr, nullptr, 50}, in_place(0, 10)}, sizeof(float)));
}

}  // namespace
}  // namespace chorus
