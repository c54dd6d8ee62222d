// Checkpoint files: a round trip restores a state that continues training
// exactly like the original; truncated, corrupt, foreign and missing files
// are refused with messages naming them; a failed write leaves the previous
// checkpoint intact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>

#include <filesystem>

#include <torch/torch.h>

#include "checkpoint.h"
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

TrainingProgress sample_progress() {
  TrainingProgress progress;
  progress.epochs_completed = 3;
  progress.best_test_loss = 0.25;
  progress.best_epoch = 2;
  progress.epochs_without_improvement = 1;
  progress.last_test_loss = 0.3;
  progress.last_test_accuracy = 0.91;
  return progress;
}

TEST(Checkpoint, RestoredStateContinuesExactlyLikeTheOriginal) {
  Trained original(ModelKind::kMlp, 1, 3);
  const std::string bytes = train_mnist::encode_checkpoint(*original.model, *original.adam, sample_progress());

  Trained restored(ModelKind::kMlp, 2, 0);  // other initial parameters, empty Adam state
  ASSERT_FALSE(same_parameters(*original.model, *restored.model));
  const TrainingProgress progress =
      train_mnist::decode_checkpoint(bytes, "original.ckpt", *restored.model, *restored.adam);
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
  Trained original(ModelKind::kCnn, 3, 2);
  Trained restored(ModelKind::kCnn, 4, 0);
  train_mnist::decode_checkpoint(
      train_mnist::encode_checkpoint(*original.model, *original.adam, TrainingProgress{}), "cnn.ckpt",
      *restored.model, *restored.adam);
  original.step(7);
  restored.step(7);
  EXPECT_TRUE(same_parameters(*original.model, *restored.model));
}

class BadCheckpoint : public ::testing::Test {
 protected:
  BadCheckpoint()
      : source_(ModelKind::kMlp, 5, 1), target_(ModelKind::kMlp, 6, 0),
        target_copy_(ModelKind::kMlp, 6, 0) {
    bytes_ = train_mnist::encode_checkpoint(*source_.model, *source_.adam, sample_progress());
  }
  // Loads `bytes` from a file and returns the error; the target model must be
  // unchanged by a refused file.
  std::string load_error(const std::string& bytes) {
    const std::string path = dir_.file("last.ckpt");
    write_bytes(path, bytes);
    const std::string error = error_of([&] { train_mnist::load_checkpoint(path, *target_.model, *target_.adam); });
    EXPECT_TRUE(same_parameters(*target_.model, *target_copy_.model)) << "a refused checkpoint changed the model";
    return error;
  }
  std::string path() const { return dir_.file("last.ckpt"); }

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
              AllOf(HasSubstr("Checkpoint '" + path() + "' is not a train_mnist checkpoint"),
                    HasSubstr("expected it to start with 'CHORUS-MNIST-CHECKPOINT 1'")));
}

TEST_F(BadCheckpoint, EmptyFile) {
  EXPECT_THAT(load_error(""), HasSubstr("Checkpoint '" + path() + "' is not a train_mnist checkpoint"));
}

TEST_F(BadCheckpoint, ForeignModel) {
  Trained cnn(ModelKind::kCnn, 7, 1);
  EXPECT_THAT(load_error(train_mnist::encode_checkpoint(*cnn.model, *cnn.adam, TrainingProgress{})),
              AllOf(HasSubstr("Checkpoint '" + path() + "' was written for another model (model cnn vs mlp"),
                    HasSubstr("expected a checkpoint of model mlp")));
}

TEST_F(BadCheckpoint, Missing) {
  const std::string missing = dir_.file("nowhere.ckpt");
  EXPECT_THAT(error_of([&] { train_mnist::load_checkpoint(missing, *target_.model, *target_.adam); }),
              AllOf(HasSubstr("Cannot open checkpoint '" + missing + "'"), HasSubstr("No such file or directory")));
}

TEST(ModelSignature, NamesTheFirstDifference) {
  torch::manual_seed(0);
  const auto mlp = train_mnist::make_model(ModelKind::kMlp);
  const auto signature = train_mnist::ModelSignature::of(*mlp);
  EXPECT_EQ(signature.serialize(),
            "kind mlp\nparameter hidden.weight 128 784\nparameter hidden.bias 128\n"
            "parameter output.weight 10 128\nparameter output.bias 10\n");
  EXPECT_EQ(signature.difference(signature), "");
  auto narrower = signature;
  narrower.parameters[0].second = {64, 784};
  EXPECT_EQ(narrower.difference(signature), "parameter hidden.weight [64, 784] vs [128, 784]");
  auto shorter = signature;
  shorter.parameters.pop_back();
  EXPECT_EQ(shorter.difference(signature), "3 parameters vs 4");
  const auto parsed = train_mnist::ModelSignature::parse(signature.serialize(), "test");
  EXPECT_EQ(parsed.difference(signature), "");
  EXPECT_THAT(error_of([] { train_mnist::ModelSignature::parse("kind mlp\nweights 1 2\n", "Checkpoint 'x'"); }),
              HasSubstr("Checkpoint 'x' has a malformed model signature line 'weights 1 2'"));
}

TEST(AtomicWrite, ReplacesTheFileAndLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("last.ckpt");
  train_mnist::write_file_atomically(path, "first");
  train_mnist::write_file_atomically(path, "second version");
  EXPECT_EQ(read_bytes(path), "second version");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

// Restores the file-size limit and SIGXFSZ's disposition on destruction.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    previous_handler_ = signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, previous_handler_);
  }

 private:
  rlimit saved_{};
  sighandler_t previous_handler_;
};

TEST(AtomicWrite, FailedWriteLeavesThePreviousCheckpointReadable) {
  TempDir dir;
  const std::string path = dir.file("last.ckpt");
  Trained good(ModelKind::kMlp, 8, 2);
  const std::string good_bytes = train_mnist::encode_checkpoint(*good.model, *good.adam, sample_progress());
  train_mnist::write_file_atomically(path, good_bytes);

  Trained newer(ModelKind::kMlp, 9, 3);
  const std::string newer_bytes = train_mnist::encode_checkpoint(*newer.model, *newer.adam, TrainingProgress{});
  std::string error;
  {
    // A real write failure: the kernel refuses to grow the temporary file
    // past 4 KiB (EFBIG), as a full disk would (ENOSPC).
    FileSizeLimit limit(4096);
    error = error_of([&] { train_mnist::write_file_atomically(path, newer_bytes); });
  }
  EXPECT_THAT(error, AllOf(HasSubstr("Cannot write checkpoint '" + path + "'"), HasSubstr("File too large"),
                           HasSubstr("the previous checkpoint, if any, is unchanged")));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1)
      << "the temporary file was left behind";

  Trained reader(ModelKind::kMlp, 10, 0);
  const TrainingProgress progress = train_mnist::load_checkpoint(path, *reader.model, *reader.adam);
  EXPECT_EQ(progress.epochs_completed, 3);
  EXPECT_TRUE(same_parameters(*reader.model, *good.model));
}

TEST(AtomicWrite, UnwritableFolderIsNamed) {
  EXPECT_THAT(error_of([] { train_mnist::write_file_atomically("/nonexistent-folder/last.ckpt", "x"); }),
              AllOf(HasSubstr("Cannot write checkpoint '/nonexistent-folder/last.ckpt'"),
                    HasSubstr("creating a temporary file in /nonexistent-folder failed")));
}

}  // namespace
}  // namespace train_mnist_test
