// train_mnist_cuda's checkpoint format, parameter layout and initialisation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "chorus/atomic_file.h"
#include "chorus/checked_file.h"
#include "cuda_checkpoint.h"
#include "mlp_layout.h"
#include "test_files.h"

namespace train_mnist_cuda_test {
namespace {

using namespace train_mnist_cuda;
using train_mnist_test::error_of;
using train_mnist_test::read_bytes;
using train_mnist_test::TempDir;
using train_mnist_test::write_bytes;
using ::testing::HasSubstr;

CheckpointState sample_state() {
  CheckpointState state;
  state.progress.epochs_completed = 3;
  state.progress.best_test_loss = 0.25;
  state.progress.best_epoch = 2;
  state.progress.epochs_without_improvement = 1;
  state.progress.last_test_loss = 0.3;
  state.progress.last_test_accuracy = 0.91;
  state.adam_step = 375;
  state.parameters = initial_parameters(5);
  state.adam_m.assign(static_cast<size_t>(kParameterCount), 0.0f);
  state.adam_v.assign(static_cast<size_t>(kParameterCount), 0.0f);
  for (size_t i = 0; i < state.adam_m.size(); ++i) {
    state.adam_m[i] = static_cast<float>(i) * 1e-6f;
    state.adam_v[i] = static_cast<float>(i % 97) * 1e-9f;
  }
  return state;
}

TEST(MlpLayout, MatchesTheReferenceModel) {
  EXPECT_EQ(kHiddenWeight.offset, 0);
  EXPECT_EQ(kHiddenBias.offset, 128 * 784);
  EXPECT_EQ(kOutputWeight.offset, 128 * 784 + 128);
  EXPECT_EQ(kOutputBias.offset, 128 * 784 + 128 + 10 * 128);
  EXPECT_EQ(kParameterCount, 101770);  // LibTorch's Mlp: 784*128 + 128 + 128*10 + 10
  EXPECT_EQ(mlp_signature(),
            "kind mlp\nparameter hidden.weight 128 784\nparameter hidden.bias 128\n"
            "parameter output.weight 10 128\nparameter output.bias 10\n");
}

TEST(MlpLayout, InitialParametersAreLibTorchsDistributionAndDependOnTheSeedOnly) {
  const std::vector<float> a = initial_parameters(42);
  EXPECT_EQ(a, initial_parameters(42));
  EXPECT_NE(a, initial_parameters(43));
  ASSERT_EQ(static_cast<int64_t>(a.size()), kParameterCount);
  for (const ParameterSlice& slice : kParameterSlices) {
    const int fan_in = slice.offset < kOutputWeight.offset ? kInputs : kHidden;
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    double sum = 0, largest = 0;
    for (int64_t i = 0; i < slice.count(); ++i) {
      const double value = a[static_cast<size_t>(slice.offset + i)];
      sum += value;
      largest = std::max(largest, std::fabs(value));
    }
    EXPECT_LE(largest, bound * (1 + 1e-6)) << slice.name;
    // Uniform on [-b, b]: the largest value is near b, the mean near 0.
    EXPECT_GT(largest, bound * 0.5) << slice.name;
    EXPECT_LT(std::fabs(sum / static_cast<double>(slice.count())), bound * 0.35) << slice.name;
  }
}

TEST(CudaCheckpoint, RoundTrip) {
  const CheckpointState state = sample_state();
  const CheckpointState back = decode_checkpoint(encode_checkpoint(state), "x.ckpt");
  EXPECT_EQ(back.progress.epochs_completed, 3);
  EXPECT_EQ(back.progress.best_test_loss, 0.25);
  EXPECT_EQ(back.progress.best_epoch, 2);
  EXPECT_EQ(back.progress.epochs_without_improvement, 1);
  EXPECT_EQ(back.progress.last_test_loss, 0.3);
  EXPECT_EQ(back.progress.last_test_accuracy, 0.91);
  EXPECT_EQ(back.adam_step, 375);
  EXPECT_EQ(back.parameters, state.parameters);
  EXPECT_EQ(back.adam_m, state.adam_m);
  EXPECT_EQ(back.adam_v, state.adam_v);
}

TEST(CudaCheckpoint, AFreshRunsInfinityAndNaNSurvive) {
  CheckpointState state = sample_state();
  state.progress = TrainingProgress{};
  const CheckpointState back = decode_checkpoint(encode_checkpoint(state), "x.ckpt");
  EXPECT_TRUE(std::isinf(back.progress.best_test_loss));
  EXPECT_TRUE(std::isnan(back.progress.last_test_loss));
}

TEST(CudaCheckpoint, DamagedFilesAreNamed) {
  const std::string good = encode_checkpoint(sample_state());
  EXPECT_THAT(error_of([&] { decode_checkpoint("CHORUS-MNIST-CHECKPOINT 1\n" + good.substr(31), "a.ckpt"); }),
              HasSubstr("Checkpoint 'a.ckpt' is not a train_mnist_cuda checkpoint"));
  EXPECT_THAT(error_of([&] { decode_checkpoint(good.substr(0, 40), "a.ckpt"); }),
              HasSubstr("Checkpoint 'a.ckpt' is truncated: 40 bytes, shorter than its 47-byte header"));
  EXPECT_THAT(error_of([&] { decode_checkpoint(good.substr(0, good.size() - 1), "a.ckpt"); }),
              HasSubstr("is truncated: "));
  EXPECT_THAT(error_of([&] { decode_checkpoint(good + "x", "a.ckpt"); }), HasSubstr("has trailing bytes"));
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x10;
  EXPECT_THAT(error_of([&] { decode_checkpoint(flipped, "a.ckpt"); }),
              HasSubstr("is corrupt: its payload does not match the checksum in its header"));
  EXPECT_THAT(error_of([] { load_checkpoint("/nonexistent/last.ckpt"); }),
              HasSubstr("Cannot open checkpoint '/nonexistent/last.ckpt'"));
}

TEST(CudaCheckpoint, AnotherModelIsRefusedByName) {
  // A well-formed file whose signature differs: re-encode with the header
  // rebuilt around an edited payload.
  const std::string good = encode_checkpoint(sample_state());
  const size_t header = 31 + 16;
  std::string payload = good.substr(header);
  const size_t at = payload.find("hidden.weight 128 784");
  ASSERT_NE(at, std::string::npos);
  payload.replace(at, 21, "hidden.weight 256 784");
  std::string bytes = good.substr(0, 31);
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((payload.size() >> (8 * i)) & 0xff));
  const uint64_t checksum = chorus::checksum64(payload.data(), payload.size());
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((checksum >> (8 * i)) & 0xff));
  EXPECT_THAT(error_of([&] { decode_checkpoint(bytes + payload, "b.ckpt"); }),
              HasSubstr("Checkpoint 'b.ckpt' was written for another model (kind mlp; parameter hidden.weight 256 784"));
}

TEST(CudaCheckpoint, EncodingRefusesWrongSizes) {
  CheckpointState state = sample_state();
  state.adam_v.pop_back();
  EXPECT_THAT(error_of([&] { encode_checkpoint(state); }),
              HasSubstr("adam_v holds 101769 values, expected 101770"));
}

TEST(CudaCheckpoint, WrittenAtomicallyAndReadBack) {
  TempDir dir;
  const std::string path = last_checkpoint_path(dir.path());
  EXPECT_EQ(path, dir.path() + "/last.ckpt");
  EXPECT_EQ(best_checkpoint_path(dir.path()), dir.path() + "/best.ckpt");
  chorus::write_file_atomically(path, encode_checkpoint(sample_state()));
  EXPECT_EQ(load_checkpoint(path).adam_step, 375);
  write_bytes(path, read_bytes(path).substr(0, 100));
  EXPECT_THAT(error_of([&] { load_checkpoint(path); }), HasSubstr("is truncated"));
}

}  // namespace
}  // namespace train_mnist_cuda_test
