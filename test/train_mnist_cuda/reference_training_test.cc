// The algorithm train_mnist_cuda runs on the GPU, run on the host in double
// precision (reference_mlp.h) on the prepared MNIST split: the data order,
// initialisation, normalisation, gradient averaging over ranks and Adam's
// learning rate x ranks must reach the accuracy the GPU run is held to.
// With 2 ranks, each rank's gradient comes from its own shard's batch and
// the two are averaged, as Chorus's allreduce (average) does.
//   CHORUS_MNIST_DIR: the folder of the four IDX files (the test skips
//   without it).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "idx_files.h"
#include "mlp_layout.h"
#include "reference_mlp.h"
#include "shard_sampler.h"

namespace train_mnist_cuda_test {
namespace {

using namespace train_mnist_cuda;

struct HostSplit {
  int64_t size = 0;
  std::vector<float> images;  // normalised as the trainer does
  std::vector<int32_t> labels;
};

HostSplit load(const std::string& dir, train_mnist::MnistSplit split) {
  const train_mnist::MnistRaw raw = train_mnist::load_mnist_raw(dir, split);
  HostSplit out;
  out.size = raw.size();
  for (uint8_t p : raw.images.pixels) {
    out.images.push_back((static_cast<float>(p) / 255.0f - train_mnist::kMnistPixelMean) / train_mnist::kMnistPixelStd);
  }
  out.labels.assign(raw.labels.begin(), raw.labels.end());
  return out;
}

void gather(const HostSplit& split, const std::vector<int64_t>& indices, size_t begin, int rows, std::vector<float>* x,
            std::vector<int32_t>* y) {
  x->clear();
  y->clear();
  for (int i = 0; i < rows; ++i) {
    const int64_t source = indices[begin + static_cast<size_t>(i)];
    x->insert(x->end(), split.images.begin() + source * kInputs, split.images.begin() + (source + 1) * kInputs);
    y->push_back(split.labels[static_cast<size_t>(source)]);
  }
}

double test_accuracy(const std::vector<double>& parameters, const HostSplit& test) {
  std::vector<int64_t> all(static_cast<size_t>(test.size));
  for (int64_t i = 0; i < test.size; ++i) all[static_cast<size_t>(i)] = i;
  std::vector<float> x;
  std::vector<int32_t> y;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < test.size; begin += 1000) {
    const int rows = static_cast<int>(std::min<int64_t>(1000, test.size - begin));
    gather(test, all, static_cast<size_t>(begin), rows, &x, &y);
    correct += reference_pass(parameters, x, y, rows, 0.0).correct;
  }
  return static_cast<double>(correct) / static_cast<double>(test.size);
}

// 5 epochs, batch 64 per rank, lr 1e-3 x ranks, seed 42: the defaults.
double train(int ranks, const HostSplit& train_split, const HostSplit& test) {
  const std::vector<float> initial = initial_parameters(42);
  std::vector<double> parameters(initial.begin(), initial.end());
  std::vector<double> m(parameters.size(), 0.0), v(parameters.size(), 0.0);
  int64_t step = 0;
  std::vector<ShardSampler> samplers;
  for (int r = 0; r < ranks; ++r) samplers.emplace_back(train_split.size, 42, ranks, r);
  std::vector<float> x;
  std::vector<int32_t> y;
  double accuracy = 0;
  for (int64_t epoch = 0; epoch < 5; ++epoch) {
    std::vector<std::vector<int64_t>> shards;
    for (const ShardSampler& sampler : samplers) shards.push_back(sampler.indices(epoch));
    const int64_t samples = samplers[0].samples_per_rank();
    double loss_sum = 0;
    for (int64_t begin = 0; begin < samples; begin += 64) {
      const int rows = static_cast<int>(std::min<int64_t>(64, samples - begin));
      std::vector<double> average(parameters.size(), 0.0);
      for (int r = 0; r < ranks; ++r) {
        gather(train_split, shards[static_cast<size_t>(r)], static_cast<size_t>(begin), rows, &x, &y);
        const ReferencePass pass = reference_pass(parameters, x, y, rows, 1.0 / rows);
        loss_sum += pass.loss_sum;
        for (size_t i = 0; i < average.size(); ++i) average[i] += pass.gradients[i] / ranks;
      }
      reference_adam(parameters, average, m, v, ++step, 1e-3 * ranks);
    }
    accuracy = test_accuracy(parameters, test);
    std::printf("reference, %d rank(s): epoch %lld  train loss %.4f  test accuracy %.4f\n", ranks,
                static_cast<long long>(epoch + 1), loss_sum / static_cast<double>(samples * ranks), accuracy);
  }
  return accuracy;
}

class ReferenceTraining : public ::testing::TestWithParam<int> {};

TEST_P(ReferenceTraining, ReachesTheAccuracyTheGpuRunIsHeldTo) {
  const char* dir = std::getenv("CHORUS_MNIST_DIR");
  if (dir == nullptr) GTEST_SKIP() << "CHORUS_MNIST_DIR is not set (the folder of the prepared MNIST files)";
  const HostSplit train_split = load(dir, train_mnist::MnistSplit::kTrain);
  const HostSplit test = load(dir, train_mnist::MnistSplit::kTest);
  EXPECT_GE(train(GetParam(), train_split, test), 0.92);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ReferenceTraining, ::testing::Values(1, 2));

}  // namespace
}  // namespace train_mnist_cuda_test
