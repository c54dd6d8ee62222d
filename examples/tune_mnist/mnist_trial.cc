#include "mnist_trial.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/serialize.h>

#include "chorus/atomic_file.h"
#include "chorus/torch.h"
#include "example_error.h"

namespace tune_mnist {
namespace {

namespace ct = chorus::torch;
constexpr int64_t kEvalChunk = 1000;

train_mnist::MnistData slice(const train_mnist::MnistData& d, int64_t begin, int64_t count) {
  return {d.images.narrow(0, begin, count), d.labels.narrow(0, begin, count)};
}

std::string serialize(WidthMlp& model, torch::optim::Adam& adam) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive, adam_archive;
  model.save(model_archive);
  adam.save(adam_archive);
  archive.write("model", model_archive);
  archive.write("optimizer", adam_archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void deserialize(const std::string& bytes, WidthMlp& model, torch::optim::Adam* adam) {
  torch::serialize::InputArchive archive;
  std::istringstream in(bytes);
  archive.load_from(in);
  torch::serialize::InputArchive model_archive, adam_archive;
  archive.read("model", model_archive);
  model.load(model_archive);
  if (adam) {
    archive.read("optimizer", adam_archive);
    adam->load(adam_archive);
  }
}

bool read_file(const std::string& path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *bytes = s.str();
  return static_cast<bool>(in) || in.eof();
}

}  // namespace

WidthMlp::WidthMlp(int64_t hidden) {
  hidden_ = register_module("hidden", torch::nn::Linear(784, hidden));
  output_ = register_module("output", torch::nn::Linear(hidden, 10));
}

torch::Tensor WidthMlp::forward(torch::Tensor images) {
  return output_->forward(torch::relu(hidden_->forward(images.flatten(1))));
}

TuneData load_tune_data(const std::string& data_dir, int64_t validation, int64_t train_limit) {
  const train_mnist::MnistData all = train_mnist::load_mnist(data_dir, train_mnist::MnistSplit::kTrain);
  if (validation >= all.size())
    train_mnist::fail("--validation-samples " + std::to_string(validation) + " leaves no training images: the " +
                      "training file has " + std::to_string(all.size()) + " (expected fewer validation images)");
  const int64_t rest = all.size() - validation;
  TuneData data;
  data.train = slice(all, 0, train_limit > 0 ? std::min(train_limit, rest) : rest);
  data.validation = slice(all, rest, validation);
  data.test = train_mnist::load_mnist(data_dir, train_mnist::MnistSplit::kTest);
  return data;
}

std::string checkpoint_path(const std::string& directory, int64_t trial, int64_t epochs) {
  return directory + "/trial-" + std::to_string(trial) + "-epoch-" + std::to_string(epochs) + ".pt";
}

double accuracy(WidthMlp& model, const train_mnist::MnistData& data, const chorus::ProcessSet& set,
                const std::string& name) {
  model.eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor mine =
      torch::arange(chorus::process_set_rank(set), data.size(), chorus::process_set_size(set), torch::kInt64);
  double correct = 0;
  for (int64_t begin = 0; begin < mine.size(0); begin += kEvalChunk) {
    const torch::Tensor chunk = mine.narrow(0, begin, std::min(kEvalChunk, mine.size(0) - begin));
    const torch::Tensor logits = model.forward(data.images.index_select(0, chunk));
    correct += logits.argmax(1).eq(data.labels.index_select(0, chunk)).sum().item<double>();
  }
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  sum.process_set = set;
  chorus::allreduce(name, chorus::Tensor(&correct, chorus::DataType::kFloat64, {1}), sum);
  return correct / static_cast<double>(data.size());
}

double MnistTrial::operator()(chorus::tune::TrialContext& ctx) const {
  const chorus::tune::Config& c = ctx.hyperparameters();
  const chorus::ProcessSet set = ctx.process_set;
  const int members = chorus::process_set_size(set);
  const int leader = chorus::process_set_ranks(set).front();
  const bool is_leader = chorus::rank() == leader;
  const int64_t batch = c.get_int("batch_size");

  // The same initial model on every member (and for every run of the trial).
  torch::manual_seed(seed_ * 1000003 + static_cast<uint64_t>(ctx.trial));
  auto model = std::make_shared<WidthMlp>(c.get_int("hidden"));
  // As train_mnist: lr is one process's; Adam runs with lr x the group's ranks.
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(c.get_double("lr") * members));

  int64_t first_epoch = 0;
  if (ctx.previous_budget > 0) {
    int64_t found = 0;
    if (is_leader) {
      std::string bytes;
      if (read_file(checkpoint_path(checkpoint_dir_, ctx.trial, ctx.previous_budget), &bytes)) {
        try {
          deserialize(bytes, *model, &adam);
          found = 1;
        } catch (const std::exception&) {
          // Unreadable: retrain from scratch, like a missing file (below).
          // Throwing here would leave the group's other ranks waiting.
        }
      }
    }
    found = ct::broadcast_scalar(found, leader, "tune_mnist.found", set);
    if (found) {
      ct::broadcast_parameters(*model, leader, set);
      ct::broadcast_optimizer_state(adam, leader, set);
      first_epoch = ctx.previous_budget;
    } else {
      ctx.resource_used = ctx.budget;  // retrained from scratch: counted in full
    }
  }

  ct::DistributedOptimizerOptions distributed;
  distributed.process_set = set;
  ct::DistributedOptimizer optimizer(adam, model->named_parameters(), distributed);
  ct::DistributedSampler sampler(data_.train.size(), ct::DistributedSampler::Options{true, false, seed_}, members,
                                 chorus::process_set_rank(set));
  for (int64_t epoch = first_epoch; epoch < ctx.budget; ++epoch) {
    model->train();
    sampler.set_epoch(epoch);
    const torch::Tensor order = torch::tensor(sampler.indices(), torch::kInt64);
    double loss_sum = 0;
    for (int64_t begin = 0; begin < order.size(0); begin += batch) {
      const torch::Tensor b = order.narrow(0, begin, std::min(batch, order.size(0) - begin));
      optimizer.zero_grad();
      const torch::Tensor loss = torch::nn::functional::cross_entropy(
          model->forward(data_.train.images.index_select(0, b)), data_.train.labels.index_select(0, b));
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>();
    }
    // A diverged trial: NaN fails it for the group (every member sees the
    // same averaged gradients, hence the same NaN).
    if (!std::isfinite(loss_sum)) return std::nan("");
  }
  if (is_leader) {
    std::filesystem::create_directories(checkpoint_dir_);
    chorus::write_file_atomically(checkpoint_path(checkpoint_dir_, ctx.trial, ctx.budget), serialize(*model, adam), "checkpoint");
  }
  return accuracy(*model, data_.validation, set, "tune_mnist.validation");
}

std::shared_ptr<WidthMlp> load_trained_model(const std::string& directory, int64_t trial, int64_t epochs,
                                             int64_t hidden) {
  auto model = std::make_shared<WidthMlp>(hidden);
  std::string error;
  if (chorus::rank() == 0) {
    std::string bytes;
    const std::string path = checkpoint_path(directory, trial, epochs);
    if (!read_file(path, &bytes)) {
      error = "cannot read " + path;
    } else {
      try {
        deserialize(bytes, *model, nullptr);
      } catch (const std::exception& e) {
        error = path + ": " + e.what();
      }
    }
  }
  error = ct::broadcast_bytes(error, 0, "tune_mnist.load_error");
  if (!error.empty()) train_mnist::fail(error);
  ct::broadcast_parameters(*model, 0);
  return model;
}

}  // namespace tune_mnist
