// docs/BUILDING.md's "Using Chorus in your project" training program, built from an
// installed Chorus (Chorus::torch): the five added lines, the prefetching
// loader over the DistributedSampler, the gradient scaler and checkpoints.
// It fits a linear model to data generated from known weights, so the
// result is checked against those weights; and it resumes from its newest
// checkpoint, so consumer_test.sh checks that a run stopped and resumed ends
// with the same weights as one that was not.
//   train_consumer <checkpoint dir> <epochs>
// Prints "train_consumer final: <weights and bias>" on rank 0; exit status 0
// when the fitted weights are within 1e-3 of the true ones.
#include <torch/torch.h>

#include <chorus/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

constexpr int64_t kSamples = 512, kFeatures = 4;
const std::vector<float> kTrueWeights = {0.5f, -1.0f, 2.0f, 0.25f};
constexpr float kTrueBias = 0.75f;

// The same data on every rank: x from a fixed seed, y = x.w + b exactly.
struct Data {
  torch::Tensor x, y;
};
Data make_data() {
  torch::manual_seed(1234);
  Data d;
  d.x = torch::randn({kSamples, kFeatures});
  d.y = torch::matmul(d.x, torch::tensor(kTrueWeights).unsqueeze(1)) + kTrueBias;
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: train_consumer <checkpoint dir> <epochs>\n");
    return 2;
  }
  const std::string checkpoint_dir = argv[1];
  const int64_t epochs = std::atoll(argv[2]);
  try {
    chorus::init();                                                                          // 1
    torch::set_num_threads(1);  // ranks share the cores
    const Data data = make_data();
    torch::manual_seed(7);  // the initial weights differ from rank 0's until the broadcast
    torch::nn::Linear model(kFeatures, 1);
    torch::optim::SGD sgd(model->parameters(), chorus::torch::scale_learning_rate(0.05));     // 2
    chorus::torch::DistributedOptimizer optimizer(sgd, model->named_parameters());           // 3
    chorus::torch::broadcast_parameters(*model, 0);                                          // 4
    chorus::torch::broadcast_optimizer_state(sgd, 0);                                        // 5

    chorus::torch::DistributedSampler sampler(kSamples, {/*shuffle=*/true, /*pad=*/false, /*seed=*/42});
    chorus::torch::PrefetchLoader loader(
        sampler,
        [&](const std::vector<size_t>& rows) {
          const auto index = torch::tensor(std::vector<int64_t>(rows.begin(), rows.end()));
          return chorus::torch::PrefetchLoader::Batch(data.x.index_select(0, index),
                                                      data.y.index_select(0, index));
        },
        {/*batch_size=*/16, /*workers=*/1, /*depth=*/4, /*pin_memory=*/false});
    chorus::torch::GradScaler scaler;
    chorus::torch::CheckpointManagerOptions kept;
    kept.directory = checkpoint_dir;
    kept.keep_last = 2;
    chorus::torch::CheckpointManager checkpoints(kept);
    chorus::torch::CheckpointContents contents(*model, "linear-4");
    contents.with_optimizer(sgd).with_scaler(scaler);

    const int64_t first_epoch = checkpoints.resume(contents);  // rank 0's newest checkpoint, or 0
    for (int64_t epoch = first_epoch; epoch < epochs; ++epoch) {
      sampler.set_epoch(epoch);
      loader.reset();
      double loss_sum = 0;
      int64_t batches = 0;
      while (auto batch = loader.next()) {
        optimizer.zero_grad();
        const auto loss = torch::mse_loss(model->forward(batch->data), batch->target);
        scaler.scale(loss).backward();
        scaler.step(optimizer);
        scaler.update();
        loss_sum += loss.item<double>();
        ++batches;
      }
      const double mean_loss = chorus::torch::allreduce_metric(loss_sum / batches, "train_loss");
      checkpoints.save(contents, epoch + 1, mean_loss);
    }

    const auto weights = model->weight.detach().flatten();
    const double bias = model->bias.detach().item<double>();
    double worst = std::fabs(bias - kTrueBias);
    for (int64_t i = 0; i < kFeatures; ++i) {
      worst = std::max(worst, std::fabs(weights[i].item<double>() - kTrueWeights[i]));
    }
    if (chorus::rank() == 0) {
      std::printf("train_consumer final:");
      for (int64_t i = 0; i < kFeatures; ++i) std::printf(" %.9g", weights[i].item<double>());
      std::printf(" %.9g (largest error against the true weights %.3g)\n", bias, worst);
    }
    const bool fitted = epochs < 8 || worst < 1e-3;  // short runs are checked by their resume
    if (!fitted) std::fprintf(stderr, "rank %d: weights are %.3g off the true ones\n", chorus::rank(), worst);
    chorus::shutdown();
    return fitted ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_consumer: %s\n", e.what());
    return 1;
  }
}
