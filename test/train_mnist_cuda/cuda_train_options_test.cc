// train_mnist_cuda's command line: train_mnist's defaults and checks, less
// the LibTorch options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cuda_train_options.h"
#include "test_files.h"

namespace train_mnist_cuda_test {
namespace {

using ::testing::HasSubstr;
using train_mnist_cuda::CudaTrainOptions;
using train_mnist_test::error_of;

CudaTrainOptions parse(const std::vector<std::string>& arguments) {
  const auto parsed = train_mnist_cuda::parse_cuda_train_options(arguments);
  EXPECT_TRUE(parsed.options.has_value());
  return parsed.options.value_or(CudaTrainOptions{});
}

std::string parse_error(const std::vector<std::string>& arguments) {
  return error_of([&] { train_mnist_cuda::parse_cuda_train_options(arguments); });
}

TEST(CudaTrainOptions, DefaultsAreTheReferenceRun) {
  const CudaTrainOptions options = parse({});
  EXPECT_EQ(options.epochs, 5);
  EXPECT_EQ(options.batch_size, 64);
  EXPECT_EQ(options.lr, 1e-3);
  EXPECT_EQ(options.seed, 42u);
  EXPECT_EQ(options.data_dir, "data/mnist");
  EXPECT_EQ(options.checkpoint_dir, "");
  EXPECT_FALSE(options.resume);
  EXPECT_EQ(options.early_stopping_patience, 0);
  EXPECT_EQ(options.clip_grad_norm, 0);
  EXPECT_EQ(options.accumulate, 1);
  EXPECT_EQ(options.summary_json, "");
  EXPECT_EQ(options.progress, CudaTrainOptions::Progress::kAuto);
}

TEST(CudaTrainOptions, EveryFlag) {
  const CudaTrainOptions options =
      parse({"--epochs", "7", "--batch-size=32", "--lr", "0.01", "--seed", "18446744073709551615", "--data-dir",
             "/d", "--checkpoint-dir", "/c", "--resume", "--early-stopping-patience", "2", "--clip-grad-norm",
             "1.5", "--accumulate", "4", "--summary-json", "/s.json", "--progress", "epochs"});
  EXPECT_EQ(options.epochs, 7);
  EXPECT_EQ(options.batch_size, 32);
  EXPECT_EQ(options.lr, 0.01);
  EXPECT_EQ(options.seed, 18446744073709551615ull);
  EXPECT_EQ(options.data_dir, "/d");
  EXPECT_EQ(options.checkpoint_dir, "/c");
  EXPECT_TRUE(options.resume);
  EXPECT_EQ(options.early_stopping_patience, 2);
  EXPECT_EQ(options.clip_grad_norm, 1.5);
  EXPECT_EQ(options.accumulate, 4);
  EXPECT_EQ(options.summary_json, "/s.json");
  EXPECT_EQ(options.progress, CudaTrainOptions::Progress::kEpochs);
  EXPECT_EQ(parse({"--progress", "live"}).progress, CudaTrainOptions::Progress::kLive);
}

TEST(CudaTrainOptions, HelpListsTheOptions) {
  const auto parsed = train_mnist_cuda::parse_cuda_train_options({"--help"});
  EXPECT_FALSE(parsed.options.has_value());
  for (const char* flag : {"--epochs", "--batch-size", "--lr", "--seed", "--data-dir", "--checkpoint-dir",
                           "--resume", "--early-stopping-patience", "--clip-grad-norm", "--accumulate",
                           "--summary-json", "--progress", "local_rank % number of GPUs", "CHORUS_CUDA_DEVICE"}) {
    EXPECT_THAT(parsed.help, HasSubstr(flag));
  }
}

TEST(CudaTrainOptions, BadValuesNameTheFlagAndTheAcceptedValues) {
  EXPECT_EQ(parse_error({"--epochs", "0"}), "--epochs=0 is invalid: expected an integer from 1 to 100000");
  EXPECT_EQ(parse_error({"--batch-size", "12x"}), "--batch-size=12x is invalid: expected an integer from 1 to 65536");
  EXPECT_EQ(parse_error({"--batch-size", "65537"}),
            "--batch-size=65537 is invalid: expected an integer from 1 to 65536");
  EXPECT_EQ(parse_error({"--lr", "0"}), "--lr=0 is invalid: expected a number above 0 to 10");
  EXPECT_EQ(parse_error({"--lr", "inf"}), "--lr=inf is invalid: expected a number above 0 to 10");
  EXPECT_EQ(parse_error({"--seed", "-1"}), "--seed=-1 is invalid: expected an integer from 0 to 18446744073709551615");
  EXPECT_EQ(parse_error({"--accumulate", "1025"}), "--accumulate=1025 is invalid: expected an integer from 1 to 1024");
  EXPECT_EQ(parse_error({"--clip-grad-norm", "-1"}), "--clip-grad-norm=-1 is invalid: expected a number from 0 to 1e+09");
  EXPECT_EQ(parse_error({"--early-stopping-patience", "two"}),
            "--early-stopping-patience=two is invalid: expected an integer from 0 to 100000");
  EXPECT_EQ(parse_error({"--data-dir", ""}), "--data-dir= is invalid: expected a folder with the MNIST IDX files");
  EXPECT_EQ(parse_error({"--checkpoint-dir", ""}), "--checkpoint-dir= is invalid: expected a folder for checkpoints");
  EXPECT_EQ(parse_error({"--summary-json", ""}), "--summary-json= is invalid: expected a file path");
  EXPECT_EQ(parse_error({"--progress", "bar"}), "--progress=bar is invalid: expected auto, live or epochs");
  EXPECT_EQ(parse_error({"--resume"}), "--resume needs --checkpoint-dir (the folder whose last.ckpt to continue from)");
}

TEST(CudaTrainOptions, LibTorchOptionsAndStrayWordsAreRefused) {
  for (const char* flag : {"--model", "--threads", "--compression", "--epoch"}) {
    const std::string error = parse_error({flag, "1"});
    EXPECT_THAT(error, HasSubstr(std::string("unrecognised option '") + flag + "'"));
    EXPECT_THAT(error, HasSubstr("train_mnist_cuda --help lists the options"));
  }
  EXPECT_EQ(parse_error({"--epochs", "2", "extra"}),
            "Unexpected argument 'extra': train_mnist_cuda takes options only (train_mnist_cuda --help lists them)");
}

}  // namespace
}  // namespace train_mnist_cuda_test
