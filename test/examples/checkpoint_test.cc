// train_mnist's checkpoints on chorus::torch's library: a round trip
// restores a state (model, Adam, progress) that continues training exactly
// like the original; truncated, corrupt, foreign and missing files are
// refused with messages naming them, leaving the model unchanged. (The
// library's own tests: test/torch/unit/checkpoint_file_test.cc,
// test/unit/checked_file_test.cc, test/torch/parallel/checkpoint_parallel_test.cc.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "checkpoint.h"
#include "chorus/atomic_file.h"
#include "models.h"
#include "test_files.h"

namespace train_mnist_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using train_mnist::Classifier;
using train_mnist::ModelKind;
using train_mnist::TrainingProgress;

// A model with an optimizer that has taken `steps` steps on fixed data, so
// Adam's moments and step counts are not empty.
struct Trained {
  std::shared_ptr<Classifier> model;
  std::unique_ptr<torch::optim::Adam> adam;

  Trained(ModelKind kind, uint64_t seed, int steps) {
    torch::manual_seed(seed);
    model = train_mnist::make_model(kind);
    adam = std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(1e-3));
    for (int i = 0; i < steps; ++i) step(i);
  }
  // One step on a batch that depends only on `i`.
  void step(int i) {
    torch::manual_seed(1000 + i);
    const torch::Tensor images = torch::randn({8, 1, 28, 28});
    const torch::Tensor labels = torch::randint(0, 10, {8}, torch::kInt64);
    adam->zero_grad();
    torch::nn::functional::cross_entropy(model->forward(images), labels).backward();
    adam->step();
  }
};

bool same_parameters(const Classifier& a, const Classifier& b) {
  const auto pa = a.named_parameters();
  const auto pb = b.named_parameters();
  if (pa.size() != pb.size()) return false;
  for (const auto& item : pa) {
    if (!torch::equal(item.value(), pb[item.key()])) return false;
  }
  return true;
}

// Three epochs (losses 0.4, 0.25, 0.3): best epoch 2, one without improvement.
std::string encode(Trained& trained) {
  chorus::torch::EarlyStopping stopping({});
  chorus::torch::EarlyStoppingState state;
  state.updates = 3;
  state.best = 0.25;
  state.best_update = 2;
  state.updates_without_improvement = 1;
  state.last = 0.3;
  stopping.load_state(state);
  chorus::torch::GradScaler scaler;
  chorus::torch::CheckpointExtras extras;
  train_mnist::write_progress(stopping, 0.91, extras);
  return chorus::torch::encode_checkpoint(
      train_mnist::checkpoint_contents(*trained.model, *trained.adam, scaler, extras));
}

TEST(Checkpoint, RestoredStateContinuesExactlyLikeTheOriginal) {
  TempDir dir;
  Trained original(ModelKind::kMlp, 1, 3);
  chorus::write_file_atomically(dir.file("checkpoint-3.ckpt"), encode(original));

  Trained restored(ModelKind::kMlp, 2, 0);  // other initial parameters, empty Adam state
  ASSERT_FALSE(same_parameters(*original.model, *restored.model));
  // A folder means its newest checkpoint.
  const TrainingProgress progress = train_mnist::load_checkpoint(dir.path(), *restored.model, *restored.adam);
  EXPECT_EQ(progress.epochs_completed, 3);
  EXPECT_EQ(progress.best_test_loss, 0.25);
  EXPECT_EQ(progress.best_epoch, 2);
  EXPECT_EQ(progress.epochs_without_improvement, 1);
  EXPECT_EQ(progress.last_test_loss, 0.3);
  EXPECT_EQ(progress.last_test_accuracy, 0.91);
  EXPECT_TRUE(same_parameters(*original.model, *restored.model));

  // Adam's moments and step counts came back too: two more identical steps
  // stay bit-identical (an empty or wrong Adam state would not).
  for (int i = 3; i < 5; ++i) {
    original.step(i);
    restored.step(i);
  }
  EXPECT_TRUE(same_parameters(*original.model, *restored.model));
}

TEST(Checkpoint, CnnRoundTrip) {
  TempDir dir;
  Trained original(ModelKind::kCnn, 3, 2);
  Trained restored(ModelKind::kCnn, 4, 0);
  write_bytes(dir.file("cnn.ckpt"), encode(original));
  train_mnist::load_checkpoint(dir.file("cnn.ckpt"), *restored.model, *restored.adam);
  original.step(7);
  restored.step(7);
  EXPECT_TRUE(same_parameters(*original.model, *restored.model));
}

class BadCheckpoint : public ::testing::Test {
 protected:
  BadCheckpoint()
      : source_(ModelKind::kMlp, 5, 1), target_(ModelKind::kMlp, 6, 0),
        target_copy_(ModelKind::kMlp, 6, 0) {
    bytes_ = encode(source_);
  }
  // Loads `bytes` from a file and returns the error; the target model must be
  // unchanged by a refused file.
  std::string load_error(const std::string& bytes) {
    write_bytes(path(), bytes);
    const std::string error = error_of([&] { train_mnist::load_checkpoint(path(), *target_.model, *target_.adam); });
    EXPECT_TRUE(same_parameters(*target_.model, *target_copy_.model)) << "a refused checkpoint changed the model";
    return error;
  }
  std::string path() const { return dir_.file("checkpoint-1.ckpt"); }

  TempDir dir_;
  Trained source_, target_, target_copy_;
  std::string bytes_;
};

TEST_F(BadCheckpoint, Truncated) {
  EXPECT_THAT(load_error(bytes_.substr(0, bytes_.size() - 1000)),
              AllOf(HasSubstr("Checkpoint '" + path() + "' is truncated"), HasSubstr("payload bytes, expected")));
  EXPECT_THAT(load_error(bytes_.substr(0, 30)),
              AllOf(HasSubstr("Checkpoint '" + path() + "' is truncated"), HasSubstr("shorter than its 42-byte header")));
}

TEST_F(BadCheckpoint, CorruptPayload) {
  std::string corrupt = bytes_;
  corrupt[corrupt.size() / 2] ^= 0x5a;
  EXPECT_THAT(load_error(corrupt), HasSubstr("Checkpoint '" + path() + "' is corrupt"));
}

TEST_F(BadCheckpoint, NotACheckpoint) {
  EXPECT_THAT(load_error("hello, world"),
              AllOf(HasSubstr("Checkpoint '" + path() + "' is not a Chorus checkpoint"),
                    HasSubstr("expected it to start with 'CHORUS-TORCH-CHECKPOINT 1'")));
}

TEST_F(BadCheckpoint, EmptyFile) {
  EXPECT_THAT(load_error(""), HasSubstr("Checkpoint '" + path() + "' is not a Chorus checkpoint"));
}

TEST_F(BadCheckpoint, ForeignModel) {
  Trained cnn(ModelKind::kCnn, 7, 1);
  EXPECT_THAT(load_error(encode(cnn)),
              AllOf(HasSubstr("Checkpoint '" + path() + "' was written for another model (model cnn vs mlp"),
                    HasSubstr("expected a checkpoint of model mlp")));
}

TEST_F(BadCheckpoint, Missing) {
  const std::string missing = dir_.file("nowhere.ckpt");
  EXPECT_THAT(error_of([&] { train_mnist::load_checkpoint(missing, *target_.model, *target_.adam); }),
              AllOf(HasSubstr("Cannot open checkpoint '" + missing + "'"), HasSubstr("No such file or directory")));
  EXPECT_THAT(error_of([&] { train_mnist::load_checkpoint(dir_.path(), *target_.model, *target_.adam); }),
              HasSubstr("Cannot open checkpoint '" + dir_.path() + "/checkpoint-<n>.ckpt'"));
}

TEST(ModelSignature, LabelsTheModelByKind) {
  torch::manual_seed(0);
  const auto mlp = train_mnist::make_model(ModelKind::kMlp);
  chorus::torch::GradScaler scaler;
  chorus::torch::CheckpointExtras extras;
  torch::optim::Adam adam(mlp->parameters());
  EXPECT_EQ(train_mnist::checkpoint_contents(*mlp, adam, scaler, extras).signature().serialize(),
            "model mlp\nparameter hidden.weight Float 128 784\nparameter hidden.bias Float 128\n"
            "parameter output.weight Float 10 128\nparameter output.bias Float 10\n");
}

}  // namespace
}  // namespace train_mnist_test
