// Point-to-point on torch tensors: every dtype around the ring, sending from
// and receiving into contiguous, transposed and sliced tensors (received
// values land in the caller's view, skipped elements untouched), the
// blocking forms and a mismatch. Expected values are the sender's input,
// regenerated locally.
#include <string>
#include <vector>

#include "chorus/torch/point_to_point.h"
#include "torch_test_support.h"

namespace chorus_torch_test {
namespace {

using chorus::torch::TorchHandle;
namespace ct = chorus::torch;

class TorchPointToPointTest : public TorchSuite, public ::testing::WithParamInterface<c10::ScalarType> {
 protected:
  int next() const { return (rank() + 1) % size(); }
  int prev() const { return (rank() + size() - 1) % size(); }
};

TEST_P(TorchPointToPointTest, AroundTheRingInEveryLayout) {
  const c10::ScalarType dtype = GetParam();
  int index = 0;
  for (Layout send_layout : all_layouts()) {
    for (Layout recv_layout : all_layouts()) {
      const std::string name = "torch.p2p." + dtype_label(dtype) + "." + layout_name(send_layout) + "." +
                               layout_name(recv_layout);
      const torch::Tensor mine = with_layout(make_input(dtype, {4, 3}, rank(), index), send_layout);
      torch::Tensor base;
      const torch::Tensor into = with_layout(torch::zeros({4, 3}, mine.options()), recv_layout, &base);
      TorchHandle recv = ct::recv_async(into, prev(), name);
      TorchHandle send = ct::send_async(mine, next(), name);
      const torch::Tensor sent = result_of(send);
      const torch::Tensor received = result_of(recv);
      const torch::Tensor expected = make_input(dtype, {4, 3}, prev(), index);
      ASSERT_TRUE(received.defined()) << name;
      EXPECT_TRUE(received.is_same(into)) << name;
      EXPECT_TRUE(torch::equal(into, expected)) << name << "\n" << into << "\nexpected\n" << expected;
      EXPECT_TRUE(sent.is_same(mine));
      if (recv_layout == Layout::kSliced) {
        EXPECT_TRUE(torch::equal(skipped_of(base), torch::full_like(skipped_of(base), kSentinel))) << name;
      }
      ++index;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, TorchPointToPointTest, ::testing::ValuesIn(all_dtypes()), DtypeParamName());

class TorchPointToPoint : public TorchSuite {};

TEST_F(TorchPointToPoint, BlockingFormsAndMismatch) {
  const int next = (rank() + 1) % size();
  const int prev = (rank() + size() - 1) % size();
  const torch::Tensor mine = make_input(torch::kFloat32, {1000}, rank(), 50);
  torch::Tensor into = torch::zeros({1000}, torch::kFloat32);
  if (rank() == 0) {
    ct::send(mine, next, "torch.p2p.blocking");
    ct::recv(into, prev, "torch.p2p.blocking");
  } else {
    ct::recv(into, prev, "torch.p2p.blocking");
    ct::send(mine, next, "torch.p2p.blocking");
  }
  EXPECT_TRUE(torch::equal(into, make_input(torch::kFloat32, {1000}, prev, 50)));
  if (rank() == 0) {
    ct::send(torch::ones({2, 3}, torch::kFloat64), 1, "torch.p2p.mismatch");
  } else if (rank() == 1) {
    const std::string error = error_of(ct::recv_async(torch::zeros({3, 2}, torch::kFloat32), 0, "torch.p2p.mismatch"));
    EXPECT_EQ(error, "receive of 'torch.p2p.mismatch' on rank 1 from rank 0: rank 0 sent float64 [2, 3] but rank 1 "
                     "expected float32 [3, 2]");
  }
}

}  // namespace
}  // namespace chorus_torch_test
