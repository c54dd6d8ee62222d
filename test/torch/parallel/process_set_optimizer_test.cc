// DistributedOptimizer and broadcast_parameters over a process set: the
// gradients are averaged over the set's members only (the set's size is the
// divisor), and ranks outside it neither take part nor may build one.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "chorus/torch/distributed_optimizer.h"
#include "chorus/torch/state_broadcast.h"
#include "support/harness.h"

namespace chorus_test {
namespace {

using chorus::ProcessSet;
using chorus::torch::DistributedOptimizer;
using chorus::torch::DistributedOptimizerOptions;

// Every rank but 0: at np 2 rank 1 alone, at np 3 ranks 1 and 2.
std::vector<int> set_ranks(int size) {
  std::vector<int> out;
  for (int r = 1; r < size; ++r) out.push_back(r);
  return out;
}

class ProcessSetOptimizer : public ChorusSuite {
 protected:
  static void SetUpTestSuite() {
    ::torch::set_num_threads(1);
    ChorusSuite::SetUpTestSuite();
  }
};

TEST_F(ProcessSetOptimizer, AveragesGradientsOverTheSetOnly) {
  const std::vector<int> members = set_ranks(size());
  const ProcessSet set = chorus::add_process_set(members);
  // Meanwhile every rank also trains a parameter over the global set, so
  // both kinds of reductions are in flight together under the same name.
  ::torch::Tensor global_w = ::torch::zeros({3}, ::torch::requires_grad());
  ::torch::optim::SGD global_sgd({global_w}, ::torch::optim::SGDOptions(1.0));
  DistributedOptimizerOptions global_options;
  global_options.name_prefix = "w";
  DistributedOptimizer global_opt(global_sgd, {{"w", global_w}}, global_options);

  const bool member = rank() != 0;
  ::torch::Tensor w = ::torch::zeros({3}, ::torch::requires_grad());
  ::torch::optim::SGD sgd({w}, ::torch::optim::SGDOptions(1.0));
  if (member) {
    DistributedOptimizerOptions options;
    options.process_set = set;
    options.name_prefix = "w";  // the same names as the global optimizer's
    DistributedOptimizer opt(sgd, {{"w", w}}, options);
    opt.zero_grad();
    global_opt.zero_grad();
    // d/dw of sum(w * (rank + 1)) is rank + 1 on every element.
    ((w * static_cast<double>(rank() + 1)).sum() + (global_w * static_cast<double>(rank() + 1)).sum()).backward();
    opt.step();
    global_opt.step();
  } else {
    global_opt.zero_grad();
    (global_w * static_cast<double>(rank() + 1)).sum().backward();
    global_opt.step();
    // Outside the set: refused, naming the set.
    DistributedOptimizerOptions options;
    options.process_set = set;
    const chorus::Status refused = thrown_by([&] { DistributedOptimizer opt(sgd, {{"w", w}}, options); });
    EXPECT_THAT(refused.message(), ::testing::HasSubstr("not in process set " + std::to_string(set.id)));
  }
  double set_mean = 0, global_mean = 0;
  for (int r : members) set_mean += (r + 1.0) / static_cast<double>(members.size());
  for (int r = 0; r < size(); ++r) global_mean += (r + 1.0) / size();
  // SGD with lr 1 from zeros: w = -(the averaged gradient).
  EXPECT_TRUE(::torch::allclose(global_w.detach(), ::torch::full({3}, -global_mean)));
  if (member) {
    EXPECT_TRUE(::torch::allclose(w.detach(), ::torch::full({3}, -set_mean)))
        << w << " expected " << -set_mean;
  } else {
    EXPECT_TRUE(::torch::allclose(w.detach(), ::torch::zeros({3})));
  }
  test_barrier();
  chorus::remove_process_set(set);
}

TEST_F(ProcessSetOptimizer, BroadcastParametersWithinTheSet) {
  const std::vector<int> members = set_ranks(size());
  const ProcessSet set = chorus::add_process_set(members);
  const int root = members.back();  // a rank of the job
  ::torch::OrderedDict<std::string, ::torch::Tensor> tensors;
  tensors.insert("weights", ::torch::full({4}, static_cast<double>(rank())));
  if (rank() != 0) {
    chorus::torch::broadcast_parameters(tensors, root, set);
    EXPECT_TRUE(::torch::allclose(tensors["weights"], ::torch::full({4}, static_cast<double>(root))));
  }
  test_barrier();
  // Rank 0 kept its own values.
  if (rank() == 0) {
    EXPECT_TRUE(::torch::allclose(tensors["weights"], ::torch::zeros({4})));
  }
  chorus::remove_process_set(set);
}

}  // namespace
}  // namespace chorus_test
