// broadcast_parameters and broadcast_optimizer_state. The reference is
// independent of Chorus: every model and optimizer trajectory is a
// deterministic function of its seed and the rank's steps, so each rank
// replays root's locally and compares bit for bit.
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "chorus/torch/learning_rate.h"
#include "chorus/torch/state_broadcast.h"
#include "torch_test_support.h"

namespace chorus_torch_test {
namespace {

using ::testing::HasSubstr;
namespace ct = chorus::torch;
namespace optim = torch::optim;

// A small model with parameters and buffers (BatchNorm's running stats).
torch::nn::Sequential make_model(uint64_t seed) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(4, 6), torch::nn::BatchNorm1d(6),
                               torch::nn::Functional(torch::relu), torch::nn::Linear(6, 3));
}

// Every parameter and buffer, flattened in order, as float64.
torch::Tensor flat_state(const torch::nn::Module& module) {
  std::vector<torch::Tensor> parts;
  for (const auto& p : module.parameters()) parts.push_back(p.detach().reshape(-1).to(torch::kFloat64));
  for (const auto& b : module.buffers()) parts.push_back(b.reshape(-1).to(torch::kFloat64));
  return torch::cat(parts);
}

class StateBroadcastTest : public TorchSuite {};

TEST_F(StateBroadcastTest, DifferentlySeededModelsBecomeRootsModel) {
  const int root = size() - 1;
  torch::nn::Sequential model = make_model(100 + rank());
  // Train mode: a forward pass moves BatchNorm's running stats away from
  // their initial values (differently on every rank).
  model->train();
  torch::manual_seed(500 + rank());
  model->forward(torch::randn({8, 4}));
  const torch::Tensor mine = flat_state(*model);

  // Before: the ranks differ (gathered through Chorus, checked against the
  // locally known values of this rank).
  const torch::Tensor gathered = ct::allgather(mine.unsqueeze(0), "state.before");
  ASSERT_EQ(gathered.size(0), size());
  EXPECT_TRUE(torch::equal(gathered[rank()], mine));
  EXPECT_FALSE(torch::equal(gathered[0], gathered[1]));

  ct::broadcast_parameters(*model, root);

  // Root's model, rebuilt locally from its seed and its forward pass.
  torch::nn::Sequential reference = make_model(100 + root);
  reference->train();
  torch::manual_seed(500 + root);
  reference->forward(torch::randn({8, 4}));
  EXPECT_TRUE(torch::equal(flat_state(*model), flat_state(*reference)));
  for (const auto& p : model->parameters()) EXPECT_TRUE(p.requires_grad());
  const torch::Tensor after = ct::allgather(flat_state(*model).unsqueeze(0), "state.after");
  for (int r = 0; r < size(); ++r) EXPECT_TRUE(torch::equal(after[r], flat_state(*reference)));
}

TEST_F(StateBroadcastTest, NamedTensorsIncludingNonContiguousOnes) {
  torch::OrderedDict<std::string, torch::Tensor> tensors;
  tensors.insert("a", make_input(torch::kFloat32, {5}, rank(), 0).requires_grad_(true));
  torch::Tensor base = make_input(torch::kInt64, {3, 4}, rank(), 1);
  tensors.insert("b", base.t());
  ct::broadcast_parameters(tensors, 0);
  EXPECT_TRUE(torch::equal(tensors["a"].detach(), make_input(torch::kFloat32, {5}, 0, 0)));
  EXPECT_TRUE(torch::equal(base, make_input(torch::kInt64, {3, 4}, 0, 1)));
  // Shapes differing across ranks: every rank gets an error naming the tensor.
  torch::OrderedDict<std::string, torch::Tensor> uneven;
  uneven.insert("w", torch::zeros({2 + rank()}));
  const chorus::Status status = chorus_test::thrown_by([&] { ct::broadcast_parameters(uneven, 0); });
  EXPECT_THAT(status.message(), HasSubstr("Mismatched shape for broadcast 'broadcast_parameters.w'"));
}

TEST_F(StateBroadcastTest, MetricsScalarsAndBytes) {
  EXPECT_DOUBLE_EQ(ct::allreduce_metric(rank() + 1.0, "metric.avg"), (size() + 1) / 2.0);
  EXPECT_DOUBLE_EQ(ct::allreduce_metric(rank() * 1.5, "metric.max", chorus::ReduceOp::kMax),
                   (size() - 1) * 1.5);
  EXPECT_EQ(ct::broadcast_scalar(int64_t{1000} + rank(), 1, "scalar.int"), 1001);
  EXPECT_DOUBLE_EQ(ct::broadcast_scalar(0.25 + rank(), 0, "scalar.double"), 0.25);
  // Root's bytes include NULs; the other ranks pass strings of other lengths.
  const std::string payload = std::string("head\0tail", 9) + std::string(3000, 'x');
  const std::string mine = rank() == 0 ? payload : std::string(static_cast<size_t>(rank()), 'q');
  EXPECT_EQ(ct::broadcast_bytes(mine, 0, "bytes.payload"), payload);
  EXPECT_EQ(ct::broadcast_bytes(rank() == 1 ? std::string() : std::string("ignored"), 1, "bytes.empty"),
            "");
  EXPECT_DOUBLE_EQ(ct::scale_learning_rate(0.1), 0.1 * size());
}

// One optimizer kind and how to build it with rank-dependent options.
struct Kind {
  std::string name;
  std::function<std::unique_ptr<optim::Optimizer>(std::vector<torch::Tensor>, int rank)> make;
};

std::vector<Kind> kinds() {
  return {
      {"SGD",
       [](std::vector<torch::Tensor> p, int r) {
         return std::make_unique<optim::SGD>(
             p, optim::SGDOptions(0.01 * (r + 1)).momentum(0.5 + 0.1 * r).weight_decay(1e-3 * r));
       }},
      {"Adam",
       [](std::vector<torch::Tensor> p, int r) {
         return std::make_unique<optim::Adam>(
             p, optim::AdamOptions(1e-3 * (r + 1)).betas({0.9 - 0.01 * r, 0.99}).amsgrad(r == 0));
       }},
      {"AdamW",
       [](std::vector<torch::Tensor> p, int r) {
         return std::make_unique<optim::AdamW>(
             p, optim::AdamWOptions(2e-3 * (r + 1)).weight_decay(0.01 * (r + 1)));
       }},
      {"RMSprop",
       [](std::vector<torch::Tensor> p, int r) {
         return std::make_unique<optim::RMSprop>(
             p, optim::RMSpropOptions(1e-3 * (r + 1)).momentum(0.3).centered(r != 0));
       }},
      {"Adagrad",
       [](std::vector<torch::Tensor> p, int r) {
         return std::make_unique<optim::Adagrad>(p, optim::AdagradOptions(0.05 * (r + 1)).lr_decay(0.01 * r));
       }},
  };
}

// An IValue as exact text: doubles in hex, tensors element by element.
void append_exact(const c10::IValue& value, std::string* out) {
  std::ostringstream text;
  text << std::hexfloat;
  if (value.isTensor()) {
    const torch::Tensor t = value.toTensor().to(torch::kFloat64).contiguous().reshape(-1);
    text << "tensor" << value.toTensor().sizes() << "{";
    for (int64_t i = 0; i < t.numel(); ++i) text << t[i].item<double>() << ",";
    text << "}";
  } else if (value.isDouble()) {
    text << value.toDouble();
  } else if (value.isTuple()) {
    text << "(";
    for (const auto& element : value.toTupleRef().elements()) {
      std::string inner;
      append_exact(element, &inner);
      text << inner << ",";
    }
    text << ")";
  } else {
    text << value;
  }
  *out += text.str();
}

// The contents of an archive written by a serialize() method, as exact text.
template <typename Serializable>
std::string archive_text(const Serializable& object) {
  torch::serialize::OutputArchive archive;
  object.serialize(archive);
  std::ostringstream raw;
  archive.save_to(raw);
  torch::serialize::InputArchive in;
  std::istringstream back(raw.str());
  in.load_from(back);
  std::string out;
  for (const std::string& key : in.keys()) {
    c10::IValue value;
    in.read(key, value);
    out += key + "=";
    append_exact(value, &out);
    out += "; ";
  }
  return out;
}

// Everything an optimizer holds (every group's options; per parameter, by
// position, its step counts and moment tensors) as exact text: equal text
// means bit-identical state. Positions, not save()'s keys, which are the
// parameters' addresses and differ between two models.
std::string state_text(const optim::Optimizer& optimizer) {
  std::string out;
  const auto& groups = optimizer.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    out += "group " + std::to_string(g) + " options: " + archive_text(groups[g].options()) + "\n";
    for (size_t i = 0; i < groups[g].params().size(); ++i) {
      const auto found = find_param_state(optimizer.state(), groups[g].params()[i]);
      out += "  param " + std::to_string(i) + ": ";
      out += found == optimizer.state().end() ? "no state" : archive_text(*found->second);
      out += "\n";
    }
  }
  return out;
}

// Runs `steps` steps of `optimizer` on the model, with data from (seed).
void train(torch::nn::Sequential& model, optim::Optimizer& optimizer, int steps, uint64_t seed) {
  torch::manual_seed(seed);
  for (int s = 0; s < steps; ++s) {
    optimizer.zero_grad();
    const torch::Tensor loss = model->forward(torch::randn({8, 4})).pow(2).mean();
    loss.backward();
    optimizer.step();
  }
}

struct KindName {
  std::string operator()(const ::testing::TestParamInfo<Kind>& kind) const { return kind.param.name; }
};

class OptimizerStateTest : public TorchSuite,
                           public ::testing::WithParamInterface<Kind> {};

TEST_P(OptimizerStateTest, EveryRankGetsRootsStateAndOptions) {
  const Kind& kind = GetParam();
  // Rank r takes r steps (rank 0: none, an empty state), root the most.
  const int root = size() - 1;
  for (int which_root : {root, 0}) {
    SCOPED_TRACE("root " + std::to_string(which_root));
    torch::nn::Sequential model = make_model(7);
    auto optimizer = kind.make(model->parameters(), rank());
    train(model, *optimizer, rank(), 900 + rank());

    ct::broadcast_optimizer_state(*optimizer, which_root);

    // Root's optimizer, replayed locally.
    torch::nn::Sequential replay = make_model(7);
    auto expected = kind.make(replay->parameters(), which_root);
    train(replay, *expected, which_root, 900 + which_root);
    EXPECT_EQ(state_text(*optimizer), state_text(*expected));
    EXPECT_DOUBLE_EQ(ct::get_learning_rate(*optimizer), ct::get_learning_rate(*expected));
    if (which_root == 0 && kind.name != "Adagrad") {
      // Root had taken no step: an empty state empties everyone's.
      EXPECT_TRUE(optimizer->state().empty());
    }
    // The loaded state is live: from the replay's parameters, one more step
    // on the same data gives the replay's parameters and state exactly.
    {
      torch::NoGradGuard no_grad;
      const auto theirs = replay->parameters();
      auto ours = model->parameters();
      for (size_t i = 0; i < ours.size(); ++i) ours[i].copy_(theirs[i]);
      const auto their_buffers = replay->buffers();
      auto our_buffers = model->buffers();
      for (size_t i = 0; i < our_buffers.size(); ++i) our_buffers[i].copy_(their_buffers[i]);
    }
    train(model, *optimizer, 1, 1234);
    train(replay, *expected, 1, 1234);
    EXPECT_TRUE(torch::equal(flat_state(*model), flat_state(*replay)));
    EXPECT_EQ(state_text(*optimizer), state_text(*expected));
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, OptimizerStateTest, ::testing::ValuesIn(kinds()),
                         KindName());

TEST_F(StateBroadcastTest, OptimizersOfDifferentStructureAreRefused) {
  torch::nn::Sequential model = make_model(3);
  std::vector<torch::Tensor> params = model->parameters();
  if (rank() != 0) params.pop_back();
  optim::SGD sgd(params, optim::SGDOptions(0.1).momentum(0.9));
  const chorus::Status status = chorus_test::thrown_by([&] { ct::broadcast_optimizer_state(sgd, 0); });
  if (rank() == 0) {
    EXPECT_TRUE(status.ok());
  } else {
    EXPECT_THAT(status.message(), HasSubstr("optimizer has parameter groups of sizes [" +
                                            std::to_string(params.size()) + "], root rank 0's has [" +
                                            std::to_string(params.size() + 1) + "]"));
  }
}

}  // namespace
}  // namespace chorus_torch_test
