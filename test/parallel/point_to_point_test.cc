// Point-to-point send/recv (chorus.h): every dtype around the ring, large
// and empty tensors, hundreds of messages in flight both ways with repeated
// and distinct names (order checked), alongside collectives on the
// background thread, mismatches and bad arguments. What arrives must equal,
// byte for byte, the sender's input as support/reference regenerates it.
#include <cstring>
#include <string>
#include <vector>

#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::Handle;
using chorus::Status;
using chorus::StatusCode;

constexpr uint64_t kSeed = 0x9292;

class PointToPoint : public ChorusSuite {
 protected:
  int next() const { return (rank() + 1) % size(); }
  int prev() const { return (rank() + size() - 1) % size(); }
};

::testing::AssertionResult same_bytes(const Buffer& got, const Buffer& want) {
  if (got.bytes() != want.bytes()) {
    return ::testing::AssertionFailure() << got.bytes() << " bytes, expected " << want.bytes();
  }
  if (std::memcmp(got.data(), want.data(), got.bytes()) != 0) {
    for (int64_t i = 0; i < want.elements(); ++i) {
      if (got.get(i) != want.get(i)) {
        return ::testing::AssertionFailure() << "element " << i << " is " << got.get(i) << ", expected "
                                             << want.get(i);
      }
    }
    return ::testing::AssertionFailure() << "bytes differ";
  }
  return ::testing::AssertionSuccess();
}

// A buffer of `dtype`/`shape` holding a value no input has, so that a
// receive that writes nothing is caught.
Buffer poisoned(DataType dtype, const Shape& shape) {
  Buffer b(dtype, shape);
  std::memset(b.data(), 0x5a, b.bytes());
  return b;
}

// Each rank sends to the next rank of the ring and receives from the
// previous one (at np=2 both are the other rank).
void ring_round(int rank, int size, DataType dtype, const Shape& shape, int index, const std::string& name) {
  const int next = (rank + 1) % size;
  const int prev = (rank + size - 1) % size;
  Buffer mine = make_input(dtype, shape, rank, index, kSeed);
  Buffer got = poisoned(dtype, shape);
  Handle recv = submit([&] { return chorus::recv_async(name, got.tensor(), prev); });
  Handle send = submit([&] { return chorus::send_async(name, mine.tensor(), next); });
  EXPECT_DONE(send);
  EXPECT_DONE(recv);
  EXPECT_TRUE(same_bytes(got, make_input(dtype, shape, prev, index, kSeed))) << name;
}

TEST_F(PointToPoint, EveryDtypeAroundTheRing) {
  int index = 0;
  for (DataType dtype : all_dtypes()) {
    for (const Shape& shape : {Shape{}, Shape{7}, Shape{3, 5}, Shape{1200}, Shape{33, 65}}) {
      ring_round(rank(), size(), dtype, shape, index++,
                 std::string("dtype.") + chorus::dtype_name(dtype) + "." + std::to_string(shape.size()));
    }
  }
}

TEST_F(PointToPoint, LargeAndEmptyTensors) {
  ring_round(rank(), size(), DataType::kFloat32, {8 << 20}, 100, "large.32MiB");  // 32 MiB
  ring_round(rank(), size(), DataType::kBFloat16, {1 << 20, 3}, 101, "large.6MiB");
  ring_round(rank(), size(), DataType::kFloat32, {0}, 102, "empty.0");
  ring_round(rank(), size(), DataType::kInt64, {3, 0, 2}, 103, "empty.3x0x2");
  // An empty tensor may have no memory at all.
  Handle recv = submit([&] { return chorus::recv_async("empty.null", chorus::Tensor(nullptr, DataType::kInt8, {0}), prev()); });
  Handle send = submit([&] { return chorus::send_async("empty.null", chorus::Tensor(nullptr, DataType::kInt8, {0}), next()); });
  EXPECT_DONE(send);
  EXPECT_DONE(recv);
}

// 200 messages each way between this rank and both ring neighbours, all in
// flight at once: 100 under one repeated name (the i-th received must be
// the i-th sent), 100 under distinct names received in the reverse order
// of sending (a name nobody waits for yet holds up no other), mixing
// packed (small) and separate (large) data.
TEST_F(PointToPoint, ManyInFlightBothDirections) {
  constexpr int kRepeated = 100;
  constexpr int kDistinct = 100;
  const std::vector<int> peers = size() == 2 ? std::vector<int>{next()} : std::vector<int>{next(), prev()};
  struct Out {
    Buffer data;
    Handle handle;
  };
  std::vector<Out> sends;
  std::vector<std::pair<Out, Buffer>> recvs;  // received, expected
  sends.reserve(peers.size() * (kRepeated + kDistinct));
  recvs.reserve(peers.size() * (kRepeated + kDistinct));
  const auto shape_of = [](int i) { return i % 10 == 0 ? Shape{5000} : Shape{1 + i % 7}; };
  const auto index_of = [](int from, int to, int i) { return 1000 + ((from * 64 + to) * 1000) + i; };
  for (int peer : peers) {
    for (int i = kDistinct - 1; i >= 0; --i) {  // receives of distinct names, newest first
      const std::string name = "many.distinct." + std::to_string(i);
      recvs.push_back({{poisoned(DataType::kInt32, shape_of(i)), {}},
                       make_input(DataType::kInt32, shape_of(i), peer, index_of(peer, rank(), i), kSeed)});
      auto& r = recvs.back();
      r.first.handle = submit([&] { return chorus::recv_async(name, r.first.data.tensor(), peer); });
    }
    for (int i = 0; i < kRepeated; ++i) {
      sends.push_back({make_input(DataType::kFloat64, shape_of(i), rank(), index_of(rank(), peer, -i - 1), kSeed), {}});
      auto& s = sends.back();
      s.handle = submit([&] { return chorus::send_async("many.repeated", s.data.tensor(), peer); });
      if (i % 2 == 0) {  // receives of the repeated name, half of them between the sends
        recvs.push_back({{poisoned(DataType::kFloat64, shape_of(i / 2)), {}},
                         make_input(DataType::kFloat64, shape_of(i / 2), peer, index_of(peer, rank(), -(i / 2) - 1), kSeed)});
        auto& r = recvs.back();
        r.first.handle = submit([&] { return chorus::recv_async("many.repeated", r.first.data.tensor(), peer); });
      }
    }
    for (int i = 0; i < kDistinct; ++i) {
      sends.push_back({make_input(DataType::kInt32, shape_of(i), rank(), index_of(rank(), peer, i), kSeed), {}});
      auto& s = sends.back();
      s.handle = submit([&] { return chorus::send_async("many.distinct." + std::to_string(i), s.data.tensor(), peer); });
    }
    for (int i = kRepeated / 2; i < kRepeated; ++i) {
      recvs.push_back({{poisoned(DataType::kFloat64, shape_of(i)), {}},
                       make_input(DataType::kFloat64, shape_of(i), peer, index_of(peer, rank(), -i - 1), kSeed)});
      auto& r = recvs.back();
      r.first.handle = submit([&] { return chorus::recv_async("many.repeated", r.first.data.tensor(), peer); });
    }
  }
  for (auto& [received, expected] : recvs) {
    EXPECT_DONE(received.handle);
    EXPECT_TRUE(same_bytes(received.data, expected));
  }
  for (auto& s : sends) EXPECT_DONE(s.handle);
}

// The background thread runs allreduces while point-to-point runs from
// this thread: both must come out right.
TEST_F(PointToPoint, ConcurrentWithCollectives) {
  constexpr int kAllreduces = 20;
  constexpr int kMessages = 50;
  std::vector<Buffer> reduced;
  std::vector<Handle> collectives;
  reduced.reserve(kAllreduces);
  chorus::AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  for (int i = 0; i < kAllreduces; ++i) {
    reduced.push_back(make_input(DataType::kFloat32, {257}, rank(), i, kSeed));
    collectives.push_back(
        submit([&] { return chorus::allreduce_async("concurrent.allreduce." + std::to_string(i), reduced.back().tensor(), sum); }));
  }
  for (int i = 0; i < kMessages; ++i) {
    ring_round(rank(), size(), DataType::kInt64, {1 + (i * 37) % 3000}, 5000 + i, "concurrent.p2p");
  }
  for (int i = 0; i < kAllreduces; ++i) {
    EXPECT_DONE(collectives[i]);
    EXPECT_TRUE(matches(reduced[i].tensor(),
                        reference_reduce(make_inputs(DataType::kFloat32, {257}, size(), i, kSeed), ReduceOp::kSum)));
  }
}

TEST_F(PointToPoint, BlockingFormsAroundTheRing) {
  // Rank 0 sends first and the others receive first, so the blocking calls
  // cannot all wait on each other.
  Buffer mine = make_input(DataType::kFloat16, {64}, rank(), 7000, kSeed);
  Buffer got = poisoned(DataType::kFloat16, {64});
  Status status = thrown_by([&] {
    if (rank() == 0) {
      chorus::send("blocking", mine.tensor(), next());
      chorus::recv("blocking", got.tensor(), prev());
    } else {
      chorus::recv("blocking", got.tensor(), prev());
      chorus::send("blocking", mine.tensor(), next());
    }
  });
  EXPECT_TRUE(is_ok(status));
  EXPECT_TRUE(same_bytes(got, make_input(DataType::kFloat16, {64}, prev(), 7000, kSeed)));
}

// A receive whose tensor differs from what was sent fails naming both ranks
// and both dtypes and shapes; the message is consumed, so the next one of
// the same name arrives intact. Small (packed) and large data alike.
TEST_F(PointToPoint, MismatchNamesBothRanksAndIsConsumed) {
  if (rank() > 1) return;
  struct Case {
    std::string name;
    DataType sent_dtype;
    Shape sent_shape;
    DataType recv_dtype;
    Shape recv_shape;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"mismatch.dtype", DataType::kFloat32, {4}, DataType::kInt32, {4},
       "rank 0 sent float32 [4] but rank 1 expected int32 [4]"},
      {"mismatch.shape", DataType::kFloat32, {4, 2}, DataType::kFloat32, {2, 4},
       "rank 0 sent float32 [4, 2] but rank 1 expected float32 [2, 4]"},
      {"mismatch.large", DataType::kFloat64, {100000}, DataType::kFloat64, {99999},
       "rank 0 sent float64 [100000] but rank 1 expected float64 [99999]"},
  };
  int index = 8000;
  for (const Case& c : cases) {
    Buffer first = make_input(c.sent_dtype, c.sent_shape, 0, index, kSeed);
    Buffer second = make_input(c.sent_dtype, c.sent_shape, 0, index + 1, kSeed);
    if (rank() == 0) {
      Handle a = submit([&] { return chorus::send_async(c.name, first.tensor(), 1); });
      Handle b = submit([&] { return chorus::send_async(c.name, second.tensor(), 1); });
      EXPECT_DONE(a);
      EXPECT_DONE(b);
    } else {
      Buffer wrong = poisoned(c.recv_dtype, c.recv_shape);
      Handle bad = submit([&] { return chorus::recv_async(c.name, wrong.tensor(), 0); });
      const Status status = finish(bad);
      EXPECT_EQ(status.code(), StatusCode::kMismatch) << status.message();
      EXPECT_EQ(status.message(), "receive of '" + c.name + "' on rank 1 from rank 0: " + c.message);
      Buffer right = poisoned(c.sent_dtype, c.sent_shape);
      Handle good = submit([&] { return chorus::recv_async(c.name, right.tensor(), 0); });
      EXPECT_DONE(good);
      EXPECT_TRUE(same_bytes(right, second)) << c.name;
    }
    index += 2;
  }
}

TEST_F(PointToPoint, BadArgumentsAreClearErrors) {
  Buffer b = make_input(DataType::kFloat32, {4}, rank(), 0, kSeed);
  const auto error_of = [](const std::function<void()>& call) { return thrown_by(call); };
  Status s = error_of([&] { chorus::send_async("bad", b.tensor(), rank()); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "'bad': dest_rank " + std::to_string(rank()) +
                             " is this rank itself; point-to-point needs another rank");
  s = error_of([&] { chorus::recv_async("bad", b.tensor(), size()); });
  EXPECT_EQ(s.message(), "'bad': source_rank " + std::to_string(size()) + " is not a rank of this job; expected 0 to " +
                             std::to_string(size() - 1));
  s = error_of([&] { chorus::send_async("bad", b.tensor(), -1); });
  EXPECT_EQ(s.message(), "'bad': dest_rank -1 is not a rank of this job; expected 0 to " + std::to_string(size() - 1));
  s = error_of([&] { chorus::send_async("bad", chorus::Tensor(nullptr, DataType::kFloat32, {3}), next()); });
  EXPECT_EQ(s.message(), "'bad': tensor has 3 elements but no memory (data is null)");
  s = error_of([&] { chorus::recv_async("bad", chorus::Tensor(b.data(), static_cast<DataType>(42), {1}), next()); });
  EXPECT_THAT(s.message(), ::testing::HasSubstr("'bad': tensor has unknown dtype value 42"));
  s = error_of([&] { chorus::send_async("", b.tensor(), next()); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = error_of([&] { chorus::send_async("bad", chorus::Tensor(b.data(), DataType::kFloat32, {4}, chorus::Device::cuda(0)), next()); });
  EXPECT_EQ(s.message(), "'bad': the tensor is on cuda:0; point-to-point takes host (cpu) tensors");
  s = error_of([&] { chorus::send_async(std::string(5000, 'n'), b.tensor(), next()); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("must fit in 4096 bytes"));
  // A send handle has no output.
  Buffer got = poisoned(DataType::kFloat32, {4});
  Handle recv = submit([&] { return chorus::recv_async("bad.after", got.tensor(), prev()); });
  Handle send = submit([&] { return chorus::send_async("bad.after", b.tensor(), next()); });
  EXPECT_DONE(send);
  EXPECT_DONE(recv);
  s = error_of([&] { (void)send.output(); });
  EXPECT_THAT(s.message(), ::testing::HasSubstr("not to 'bad.after' (send)"));
  EXPECT_TRUE(same_bytes(got, make_input(DataType::kFloat32, {4}, prev(), 0, kSeed)));
}

}  // namespace
}  // namespace chorus_test
