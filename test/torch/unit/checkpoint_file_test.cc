// chorus::torch checkpoints on one process: a round trip restores model
// (parameters and buffers), Adam, GradScaler and extras so that training
// continues bit-identically; a checkpoint of another model (label, shape,
// dtype, one layer more) is refused naming the first difference; corrupt and
// truncated files and missing sections are refused; a refused file leaves the
// model unchanged. Also the signature's text form and the metric rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include <torch/torch.h>

#include "chorus/torch/checkpoint/checkpoint.h"
#include "chorus/torch/checkpoint/metric_mode.h"
#include "support/chorus_error_of.h"

namespace {

using chorus_test::error_of;

namespace ct = chorus::torch;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Linear -> BatchNorm (running statistics are buffers) -> Linear.
torch::nn::Sequential make_checkpoint_model(uint64_t seed, int64_t hidden = 6) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(4, hidden), torch::nn::BatchNorm1d(hidden),
                               torch::nn::Linear(hidden, 3));
}

struct Trainee {
  torch::nn::Sequential model;
  torch::optim::Adam adam;
  ct::GradScaler scaler;
  ct::CheckpointExtras extras;

  explicit Trainee(uint64_t seed, int64_t hidden = 6)
      : model(make_checkpoint_model(seed, hidden)), adam(model->parameters(), torch::optim::AdamOptions(0.01)) {}
  ct::CheckpointContents contents() {
    ct::CheckpointContents c(*model, "net");
    c.with_optimizer(adam).with_scaler(scaler).with_extras(extras);
    return c;
  }
  void step(int i) {
    model->train();
    torch::manual_seed(100 + i);
    const torch::Tensor x = torch::randn({8, 4});
    const torch::Tensor y = torch::randint(0, 3, {8}, torch::kInt64);
    adam.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    adam.step();
  }
};

bool same_state(const torch::nn::Module& a, const torch::nn::Module& b) {
  const auto ta = a.named_parameters(), tb = b.named_parameters();
  for (const auto& item : ta) {
    if (!torch::equal(item.value(), tb[item.key()])) return false;
  }
  const auto ba = a.named_buffers(), bb = b.named_buffers();
  for (const auto& item : ba) {
    if (!torch::equal(item.value(), bb[item.key()])) return false;
  }
  return ta.size() == tb.size() && ba.size() == bb.size();
}

TEST(CheckpointFile, RoundTripContinuesBitIdentically) {
  Trainee original(1);
  for (int i = 0; i < 3; ++i) original.step(i);
  original.scaler.load_state({1024.0, 7, 2.0, 0.5, 2000});
  original.extras.set_int("epoch", 3);
  original.extras.set_double("best", 0.125);
  original.extras.set_bool("flag", true);
  original.extras.set_string("note", "a b\tc");
  const std::string bytes = ct::encode_checkpoint(original.contents());

  Trainee restored(2);
  ASSERT_FALSE(same_state(*original.model, *restored.model));
  ct::decode_checkpoint(bytes, "Checkpoint 'x'", restored.contents());
  EXPECT_TRUE(same_state(*original.model, *restored.model));
  EXPECT_EQ(restored.scaler.get_scale(), 1024.0);
  EXPECT_EQ(restored.scaler.growth_tracker(), 7);
  EXPECT_EQ(restored.extras.get_int("epoch"), 3);
  EXPECT_EQ(restored.extras.get_double("best"), 0.125);
  EXPECT_TRUE(restored.extras.get_bool("flag"));
  EXPECT_EQ(restored.extras.get_string("note"), "a b\tc");
  // Adam's moments and step counts came back: two more steps stay equal.
  for (int i = 3; i < 5; ++i) {
    original.step(i);
    restored.step(i);
  }
  EXPECT_TRUE(same_state(*original.model, *restored.model));
}

TEST(CheckpointFile, ModelOnlyContentsAndFiles) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/checkpoint_file_test_" +
                           std::to_string(::getpid()) + ".ckpt";
  Trainee original(3);
  ct::save_checkpoint_file(path, ct::CheckpointContents(*original.model, "net"));
  Trainee restored(4);
  ct::load_checkpoint_file(path, ct::CheckpointContents(*restored.model, "net"));
  EXPECT_TRUE(same_state(*original.model, *restored.model));
  // Asking for an optimizer or a scaler the file does not have is an error.
  EXPECT_THAT(error_of([&] {
                ct::load_checkpoint_file(path, ct::CheckpointContents(*restored.model, "net").with_optimizer(restored.adam));
              }),
              HasSubstr("Checkpoint '" + path + "' has no optimizer state"));
  EXPECT_THAT(error_of([&] {
                ct::load_checkpoint_file(path, ct::CheckpointContents(*restored.model, "net").with_scaler(restored.scaler));
              }),
              HasSubstr("Checkpoint '" + path + "' has no GradScaler state"));
  std::filesystem::remove(path);
  EXPECT_THAT(error_of([&] { ct::load_checkpoint_file(path, ct::CheckpointContents(*restored.model)); }),
              AllOf(HasSubstr("Cannot open checkpoint '" + path + "'"), HasSubstr("No such file or directory")));
}

class OtherModel : public ::testing::Test {
 protected:
  // The error of loading `bytes` into a fresh "net"; the model must not change.
  std::string load_error(const std::string& bytes) {
    Trainee target(9), copy(9);
    const std::string error =
        error_of([&] { ct::decode_checkpoint(bytes, "Checkpoint 'c'", target.contents()); });
    EXPECT_TRUE(same_state(*target.model, *copy.model)) << "a refused checkpoint changed the model";
    return error;
  }
};

TEST_F(OtherModel, ShapeDtypeLabelAndLayersAreNamed) {
  Trainee wider(5, 8);
  EXPECT_THAT(load_error(ct::encode_checkpoint(wider.contents())),
              AllOf(HasSubstr("Checkpoint 'c' was written for another model (parameter 0.weight [8, 4] vs [6, 4], "
                              "checkpoint vs this run)"),
                    HasSubstr("expected a checkpoint of model net")));
  Trainee doubled(5);
  doubled.model->to(torch::kFloat64);
  EXPECT_THAT(load_error(ct::encode_checkpoint(ct::CheckpointContents(*doubled.model, "net"))),
              HasSubstr("(parameter 0.weight dtype Double vs Float"));
  Trainee same(5);
  EXPECT_THAT(load_error(ct::encode_checkpoint(ct::CheckpointContents(*same.model, "other"))),
              HasSubstr("(model other vs net"));
  Trainee deeper(5);
  deeper.model->push_back(torch::nn::Linear(3, 3));
  EXPECT_THAT(load_error(ct::encode_checkpoint(ct::CheckpointContents(*deeper.model, "net"))),
              HasSubstr("was written for another model (tensor 6 parameter 3.weight vs buffer 1.running_mean"));
}

TEST_F(OtherModel, CorruptTruncatedAndForeignFilesAreNamed) {
  Trainee source(6);
  const std::string bytes = ct::encode_checkpoint(source.contents());
  std::string corrupt = bytes;
  corrupt[corrupt.size() - 100] ^= 0x10;
  EXPECT_THAT(load_error(corrupt), HasSubstr("Checkpoint 'c' is corrupt"));
  EXPECT_THAT(load_error(bytes.substr(0, bytes.size() / 2)), HasSubstr("Checkpoint 'c' is truncated"));
  EXPECT_THAT(load_error("PK\x03\x04 a zip file"),
              HasSubstr("Checkpoint 'c' is not a Chorus checkpoint (expected it to start with "
                        "'CHORUS-TORCH-CHECKPOINT 1')"));
  // A well-sealed payload that is not an archive.
  EXPECT_THAT(load_error(chorus::seal_checked(ct::checkpoint_format(), "not an archive")),
              HasSubstr("Checkpoint 'c' cannot be read as a Chorus checkpoint"));
}

TEST(ModelSignature, TextFormRoundTripsAndMalformedLinesAreNamed) {
  const auto model = make_checkpoint_model(0);
  const ct::ModelSignature signature = ct::ModelSignature::of(*model, "net");
  EXPECT_EQ(signature.serialize(),
            "model net\nparameter 0.weight Float 6 4\nparameter 0.bias Float 6\n"
            "parameter 1.weight Float 6\nparameter 1.bias Float 6\n"
            "parameter 2.weight Float 3 6\nparameter 2.bias Float 3\n"
            "buffer 1.running_mean Float 6\nbuffer 1.running_var Float 6\n"
            "buffer 1.num_batches_tracked Long\n");
  EXPECT_EQ(ct::ModelSignature::parse(signature.serialize(), "s").difference(signature), "");
  EXPECT_EQ(ct::ModelSignature::of(*model).model, model->name());
  EXPECT_THAT(error_of([] { ct::ModelSignature::parse("model m\nweights 1 2\n", "Checkpoint 'x'"); }),
              HasSubstr("Checkpoint 'x' has a malformed model signature line 'weights 1 2'"));
  EXPECT_THAT(error_of([] { ct::ModelSignature::parse("parameter w Float 1\n", "S"); }),
              HasSubstr("S has a model signature without a 'model' line"));
  auto shorter = signature;
  shorter.tensors.pop_back();
  EXPECT_EQ(shorter.difference(signature), "8 parameters and buffers vs 9");
}

TEST(CheckpointExtras, GettersNameMissingKeysAndWrongKinds) {
  ct::CheckpointExtras extras;
  extras.set_int("epoch", 2);
  EXPECT_THAT(error_of([&] { extras.get_double("epoch"); }),
              HasSubstr("value 'epoch' is of kind int; expected double"));
  EXPECT_THAT(error_of([&] { extras.get_int("step"); }), HasSubstr("no value 'step'"));
  EXPECT_EQ(extras.get_int("step", -1), -1);
  EXPECT_THAT(error_of([&] { extras.set_int("a\nb", 1); }), HasSubstr("key 'a\nb' is invalid"));
  EXPECT_EQ(extras.keys(), std::vector<std::string>{"epoch"});
}

TEST(MetricMode, ImprovementRule) {
  EXPECT_TRUE(ct::improves(ct::MetricMode::kMin, 1.0, ct::worst_metric(ct::MetricMode::kMin), 0.5));
  EXPECT_TRUE(ct::improves(ct::MetricMode::kMin, 0.4, 1.0, 0.5));
  EXPECT_FALSE(ct::improves(ct::MetricMode::kMin, 0.5, 1.0, 0.5));  // not by more than min_delta
  EXPECT_FALSE(ct::improves(ct::MetricMode::kMin, 1.0, 1.0, 0.0));
  EXPECT_TRUE(ct::improves(ct::MetricMode::kMax, 2.0, 1.0, 0.5));
  EXPECT_FALSE(ct::improves(ct::MetricMode::kMax, std::nan(""), 1.0, 0.0));
  EXPECT_EQ(ct::parse_metric_mode("max"), ct::MetricMode::kMax);
  EXPECT_THAT(error_of([] { ct::parse_metric_mode("lowest"); }),
              HasSubstr("metric mode 'lowest' is invalid; expected min or max"));
}

}  // namespace
