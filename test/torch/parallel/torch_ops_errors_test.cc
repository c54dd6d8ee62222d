// Bad input to the torch ops and the TorchHandle's contract: unsupported
// dtypes, undefined and non-CPU tensors, overlapping in-place targets,
// mismatched shapes across ranks (the runtime's message surfaces as
// chorus::Error), and handles that are polled, waited with a deadline or
// empty.
#include <chrono>
#include <string>
#include <vector>

#include "torch_test_support.h"

namespace chorus_torch_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using chorus::torch::TorchHandle;
namespace ct = chorus::torch;

class TorchErrorsTest : public TorchSuite {};

std::string thrown(const std::function<void()>& call) {
  const chorus::Status status = chorus_test::thrown_by(call);
  EXPECT_FALSE(status.ok()) << "expected a chorus::Error";
  return status.message();
}

TEST_F(TorchErrorsTest, UnsupportedDtypesAreRefusedWithTheirName) {
  const torch::Tensor complex_double = torch::ones({3}, torch::kComplexDouble);
  EXPECT_THAT(thrown([&] { ct::allreduce_async(complex_double, "bad.cdouble"); }),
              AllOf(HasSubstr("tensor 'bad.cdouble' has dtype ComplexDouble"), HasSubstr("expected one of")));
  const torch::Tensor complex = torch::ones({3}, torch::kComplexFloat);
  EXPECT_THAT(thrown([&] { ct::broadcast_(complex, 0, "bad.complex"); }),
              HasSubstr("tensor 'bad.complex' has dtype ComplexFloat"));
  EXPECT_THAT(thrown([&] { ct::allgather_async(torch::ones({2}, torch::kFloat32).to(torch::kComplexDouble),
                                               "bad.gather"); }),
              HasSubstr("has dtype ComplexDouble"));
  // A grouped allreduce names the offending member as the runtime would.
  EXPECT_THAT(thrown([&] {
                ct::grouped_allreduce_async({torch::ones({2}), torch::ones({2}, torch::kComplexDouble)},
                                            "bad.group");
              }),
              HasSubstr("tensor 'bad.group.1' has dtype ComplexDouble"));
  // bool only moves: the runtime's own message.
  EXPECT_THAT(thrown([&] { ct::allreduce_async(torch::ones({2}, torch::kBool), "bad.bool"); }),
              HasSubstr("allreduce does not support bool"));
  EXPECT_THAT(thrown([&] { ct::reducescatter_async(torch::ones({2}, torch::kBool), "bad.rs"); }),
              HasSubstr("reducescatter does not support bool"));
}

TEST_F(TorchErrorsTest, UndefinedNonCpuAndOverlappingTensorsAreRefused) {
  EXPECT_THAT(thrown([] { ct::allreduce_async(torch::Tensor(), "bad.undefined"); }),
              HasSubstr("tensor 'bad.undefined' is undefined; expected a defined tensor"));
  EXPECT_THAT(thrown([] { ct::allgather(torch::Tensor(), "bad.undefined.gather"); }),
              HasSubstr("is undefined"));
  // No GPU here: a meta tensor stands in for any non-CPU device.
  const torch::Tensor meta = torch::empty({4}, torch::TensorOptions().device(torch::kMeta));
  EXPECT_THAT(thrown([&] { ct::allreduce_async_(meta, "bad.meta"); }),
              AllOf(HasSubstr("tensor 'bad.meta' is on device meta"),
                    HasSubstr("no backend in this build supports tensors on meta")));
  const torch::Tensor sparse = torch::ones({2, 2}).to_sparse();
  EXPECT_THAT(thrown([&] { ct::allreduce_async(sparse, "bad.sparse"); }),
              HasSubstr("expected a dense (strided) tensor"));
  // An expanded view shares memory between elements: no in-place result fits.
  const torch::Tensor expanded = torch::ones({1, 3}).expand({4, 3});
  EXPECT_THAT(thrown([&] { ct::allreduce_async_(expanded, "bad.expanded"); }),
              HasSubstr("has elements that share memory"));
  // Out of place it is only read: fine (reference: 4x3 ones summed).
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  EXPECT_TRUE(close_to(ct::allreduce(expanded, "ok.expanded", sum),
                       torch::full({4, 3}, static_cast<double>(size()), torch::kFloat64)));
  EXPECT_THAT(thrown([] { ct::broadcast_(torch::ones({2}), 99, "bad.root"); }),
              HasSubstr("root rank 99 is out of range"));
}

TEST_F(TorchErrorsTest, MismatchedShapesFailOnEveryRankWithTheRuntimeMessage) {
  const torch::Tensor mine = torch::ones({2 + rank()});
  const std::string message = error_of(ct::allreduce_async(mine, "mismatch.shape"));
  EXPECT_THAT(message, HasSubstr("Mismatched shape for allreduce 'mismatch.shape': rank 0 has [2], "
                                 "rank 1 has [3]"));
  const chorus::Status status =
      chorus_test::thrown_by([&] { ct::allreduce(mine, "mismatch.shape.blocking"); });
  EXPECT_EQ(status.code(), chorus::StatusCode::kMismatch);
  const torch::Tensor typed = rank() == 0 ? torch::ones({2}) : torch::ones({2}, torch::kFloat64);
  EXPECT_THAT(error_of(ct::broadcast_async_(typed, 0, "mismatch.dtype")),
              HasSubstr("Mismatched dtype for broadcast 'mismatch.dtype': rank 0 has float32, "
                        "rank 1 has float64"));
}

TEST_F(TorchErrorsTest, HandleContract) {
  EXPECT_THAT(thrown([] { TorchHandle().wait(); }), HasSubstr("TorchHandle is empty"));
  EXPECT_FALSE(TorchHandle().valid());
  // Rank 0 submits only after every other rank has checked that its handle
  // is still pending (its test() says false and outputs() refuses).
  torch::Tensor inout = with_layout(make_input(torch::kFloat32, {3, 4}, rank(), 1),
                                    Layout::kTransposed);
  const torch::Tensor expected = [&] {
    torch::Tensor sum = torch::zeros({3, 4}, torch::kFloat64);
    for (int r = 0; r < size(); ++r) sum += make_input(torch::kFloat32, {3, 4}, r, 1).to(torch::kFloat64);
    return sum / size();
  }();
  TorchHandle handle;
  if (rank() != 0) {
    handle = ct::allreduce_async_(inout, "contract.poll");
    EXPECT_TRUE(handle.valid());
    EXPECT_EQ(handle.name(), "contract.poll");
    EXPECT_FALSE(handle.test());
    EXPECT_EQ(handle.status().code(), chorus::StatusCode::kInProgress);
    EXPECT_FALSE(handle.wait_for(std::chrono::milliseconds(1)));
    EXPECT_THAT(thrown([&] { handle.outputs(); }), HasSubstr("in progress"));
  }
  chorus_test::test_barrier();
  if (rank() == 0) handle = ct::allreduce_async_(inout, "contract.poll");
  // Polling until done copies the non-contiguous result back without wait().
  EXPECT_TRUE(chorus_test::eventually([&] { return handle.test(); }, chorus_test::kWaitTimeout));
  EXPECT_TRUE(handle.status().ok());
  EXPECT_TRUE(close_to(inout, expected));
  EXPECT_TRUE(handle.wait_for(std::chrono::milliseconds(0)));
  EXPECT_TRUE(handle.wait().is_same(inout));
  EXPECT_TRUE(close_to(handle.wait(), expected)) << "a second wait() must not copy again";
  EXPECT_EQ(handle.outputs().size(), 1u);
}

TEST_F(TorchErrorsTest, InPlaceOnParametersThatRequireGrad) {
  // A leaf that requires grad, written through a non-contiguous view: the
  // copy-back must not trip autograd's in-place checks.
  torch::Tensor weight = make_input(torch::kFloat32, {4, 3}, rank(), 2).requires_grad_(true);
  const torch::Tensor view = weight.t();
  ct::broadcast_(view, 0, "grad.broadcast");
  EXPECT_TRUE(torch::equal(weight.detach(), make_input(torch::kFloat32, {4, 3}, 0, 2)));
  EXPECT_TRUE(weight.requires_grad());
  const torch::Tensor reduced = ct::allreduce(weight, "grad.allreduce");
  EXPECT_FALSE(reduced.requires_grad());
}

}  // namespace
}  // namespace chorus_torch_test
