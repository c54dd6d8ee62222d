// A tensor on a device no backend in this build supports is refused by every
// path of the torch front end with one error: the ops, DistributedOptimizer
// (a parameter there at construction, a gradient there at submission,
// compressed or not), broadcast_parameters and broadcast_optimizer_state.
// Each refusal happens before anything is submitted or allocated, so the same
// names work afterwards and gradients are left as they were.
//
// There is no GPU here: the meta device stands in for any device this build
// cannot serve (Chorus has no kind for it, which the adapter refuses in the
// same words as a CUDA device without a GPU backend).
#include <string>
#include <vector>

#include "chorus/torch/distributed_optimizer.h"
#include "chorus/torch/state_broadcast.h"
#include "torch_test_support.h"

namespace chorus_torch_test {
namespace {

using chorus::StatusCode;
namespace ct = chorus::torch;

std::string refusal(const std::string& name) {
  return "tensor '" + name +
         "' is on device meta: no backend in this build supports tensors on meta";
}

torch::Tensor on_meta(at::IntArrayRef shape) {
  return torch::empty(shape, torch::TensorOptions().device(torch::kMeta));
}

class UnsupportedDeviceTest : public TorchSuite {
 protected:
  // `call` is refused with the one error, naming `name`.
  static void expect_refused(const std::function<void()>& call, const std::string& name) {
    const chorus::Status status = chorus_test::thrown_by(call);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
    EXPECT_EQ(status.message(), refusal(name));
  }
};

TEST_F(UnsupportedDeviceTest, TheRuntimeServesTheCpu) {
  EXPECT_TRUE(chorus::supports(chorus::Device::cpu()));
}

TEST_F(UnsupportedDeviceTest, EveryOpRefusesItBeforeSubmitting) {
  const torch::Tensor meta = on_meta({4, 2});
  const torch::Tensor cpu = torch::ones({4, 2});
  expect_refused([&] { ct::allreduce_async(meta, "ops.allreduce"); }, "ops.allreduce");
  expect_refused([&] { ct::allreduce_async_(meta, "ops.allreduce"); }, "ops.allreduce");
  expect_refused([&] { ct::allreduce(meta, "ops.allreduce"); }, "ops.allreduce");
  expect_refused([&] { ct::allreduce_(meta, "ops.allreduce"); }, "ops.allreduce");
  // The first member is fine; the group is refused as a whole, naming the
  // member as the runtime would.
  expect_refused([&] { ct::grouped_allreduce_async({cpu, meta}, "ops.group"); }, "ops.group.1");
  expect_refused([&] { ct::grouped_allreduce_async_({cpu, meta}, "ops.group"); }, "ops.group.1");
  expect_refused([&] { ct::allgather_async(meta, "ops.allgather"); }, "ops.allgather");
  expect_refused([&] { ct::broadcast_async(meta, 0, "ops.broadcast"); }, "ops.broadcast");
  expect_refused([&] { ct::broadcast_async_(meta, 0, "ops.broadcast"); }, "ops.broadcast");
  expect_refused([&] { ct::alltoall_async(meta, "ops.alltoall"); }, "ops.alltoall");
  expect_refused([&] { ct::reducescatter_async(meta, "ops.reducescatter"); }, "ops.reducescatter");

  // Nothing was left in flight under those names.
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  const torch::Tensor expected = torch::full({4, 2}, static_cast<double>(size()), torch::kFloat64);
  EXPECT_TRUE(close_to(ct::allreduce(cpu, "ops.allreduce", sum), expected));
  const std::vector<torch::Tensor> group = ct::grouped_allreduce({cpu, cpu}, "ops.group", sum);
  ASSERT_EQ(group.size(), 2u);
  EXPECT_TRUE(close_to(group[1], expected));
}

TEST_F(UnsupportedDeviceTest, DistributedOptimizerRefusesAParameterThereAtConstruction) {
  const torch::Tensor cpu = torch::ones({3}, torch::requires_grad());
  const torch::Tensor meta = on_meta({3}).requires_grad_(true);
  torch::optim::SGD sgd(std::vector<torch::Tensor>{cpu, meta}, torch::optim::SGDOptions(0.1));
  expect_refused([&] { ct::DistributedOptimizer optimizer(sgd, {{"cpu", cpu}, {"meta", meta}}); },
                 "grad.meta");
  ct::DistributedOptimizerOptions compressed;
  compressed.compression = ct::Compression::kFP16;
  compressed.name_prefix = "fp16";
  expect_refused(
      [&] { ct::DistributedOptimizer optimizer(sgd, {{"cpu", cpu}, {"meta", meta}}, compressed); },
      "fp16.meta");
}

// A gradient on that device (the parameter was checked at construction, but
// .grad can be replaced): synchronize() refuses it with the same error,
// without replacing it or making a wire buffer for it, and still reduces the
// others, so every rank's collectives pair up and the next step works.
// (A parameter cannot be moved from the CPU to meta after construction:
// set_data refuses the change of tensor type.)
TEST_F(UnsupportedDeviceTest, DistributedOptimizerRefusesAGradientThereAtSubmission) {
  for (const ct::Compression compression : {ct::Compression::kNone, ct::Compression::kFP16}) {
    SCOPED_TRACE(ct::compression_name(compression));
    const std::string prefix = std::string("given.") + ct::compression_name(compression);
    torch::Tensor given = torch::full({2}, 1.0 + rank(), torch::requires_grad());
    torch::Tensor kept = torch::full({2}, 1.0 + rank(), torch::requires_grad());
    torch::optim::SGD sgd(std::vector<torch::Tensor>{given, kept}, torch::optim::SGDOptions(0.1));
    ct::DistributedOptimizerOptions options;
    options.compression = compression;
    options.name_prefix = prefix;
    ct::DistributedOptimizer optimizer(sgd, {{"given", given}, {"kept", kept}}, options);

    const torch::Tensor meta_grad = on_meta({2});
    given.mutable_grad() = meta_grad;
    expect_refused([&] { optimizer.synchronize(); }, prefix + ".given");
    EXPECT_TRUE(given.grad().is_same(meta_grad)) << "a refused gradient stays as it was";
    EXPECT_EQ(optimizer.allreduces_submitted(), 1) << "the CPU gradient is reduced";
    EXPECT_TRUE(close_to(kept.grad(), torch::zeros({2}, torch::kFloat64)));

    // Back on the CPU, the next step reduces both: nothing was left in
    // flight or marked as submitted.
    given.mutable_grad() = torch::Tensor();
    optimizer.zero_grad();
    ((given * given).sum() + kept.sum()).backward();
    ASSERT_NO_THROW(optimizer.synchronize());
    EXPECT_EQ(optimizer.allreduces_submitted(), 3);
    // d/dgiven of given^2 is 2 * (1 + rank): averaged, 2 + (size - 1).
    EXPECT_TRUE(close_to(given.grad(), torch::full({2}, 2.0 + (size() - 1), torch::kFloat64)));
  }
}

TEST_F(UnsupportedDeviceTest, BroadcastParametersRefusesItBeforeSubmittingAny) {
  const torch::Tensor mine = torch::full({2}, static_cast<double>(rank()));
  torch::OrderedDict<std::string, torch::Tensor> tensors;
  tensors.insert("cpu", mine);
  tensors.insert("meta", on_meta({2}));
  expect_refused([&] { ct::broadcast_parameters(tensors, 0); }, "broadcast_parameters.meta");
  EXPECT_TRUE(torch::equal(mine, torch::full({2}, static_cast<double>(rank()))))
      << "the CPU tensor before the refused one must not have been broadcast";

  // A module's tensors are named by kind; every one is checked, buffers too.
  torch::nn::Module module;
  const torch::Tensor weight = module.register_parameter("weight", torch::full({2}, 1.0 + rank()));
  module.register_buffer("stats", on_meta({2}));
  expect_refused([&] { ct::broadcast_parameters(module, 0); }, "broadcast_parameters.buffer.stats");
  EXPECT_TRUE(torch::equal(weight.detach(), torch::full({2}, 1.0 + rank())));
}

TEST_F(UnsupportedDeviceTest, BroadcastOptimizerStateRefusesAParameterThere) {
  const torch::Tensor cpu = torch::ones({3}, torch::requires_grad());
  const torch::Tensor meta = on_meta({3}).requires_grad_(true);
  torch::optim::SGD sgd(std::vector<torch::Tensor>{cpu, meta}, torch::optim::SGDOptions(0.1));
  expect_refused([&] { ct::broadcast_optimizer_state(sgd, 0); },
                 "broadcast_optimizer_state.param_groups[0].params[1]");
  // The refusal came before the collective: the state broadcast still works.
  torch::optim::SGD fine(std::vector<torch::Tensor>{cpu}, torch::optim::SGDOptions(0.1));
  EXPECT_NO_THROW(ct::broadcast_optimizer_state(fine, 0));
}

}  // namespace
}  // namespace chorus_torch_test
