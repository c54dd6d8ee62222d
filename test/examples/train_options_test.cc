// train_mnist's command line: defaults, every flag, and messages for bad values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_files.h"
#include "train_options.h"

namespace train_mnist_test {
namespace {

using ::testing::HasSubstr;
using train_mnist::TrainOptions;

TrainOptions parse(const std::vector<std::string>& arguments) {
  const auto parsed = train_mnist::parse_train_options(arguments);
  EXPECT_TRUE(parsed.options.has_value());
  return parsed.options.value_or(TrainOptions{});
}

std::string parse_error(const std::vector<std::string>& arguments) {
  return error_of([&] { train_mnist::parse_train_options(arguments); });
}

TEST(TrainOptions, DefaultsAreTheReferenceRun) {
  const TrainOptions options = parse({});
  EXPECT_EQ(options.epochs, 5);
  EXPECT_EQ(options.batch_size, 64);
  EXPECT_EQ(options.lr, 1e-3);
  EXPECT_EQ(options.seed, 42u);
  EXPECT_EQ(options.data_dir, "data/mnist");
  EXPECT_EQ(options.model, train_mnist::ModelKind::kMlp);
  EXPECT_EQ(options.checkpoint_dir, "");
  EXPECT_FALSE(options.resume);
  EXPECT_EQ(options.early_stopping_patience, 0);
  EXPECT_EQ(options.clip_grad_norm, 0);
  EXPECT_EQ(options.accumulate, 1);
  EXPECT_EQ(options.compression, chorus::torch::Compression::kNone);
  EXPECT_EQ(options.threads, 1);
  EXPECT_EQ(options.amp, chorus::torch::AmpMode::kOff);
  EXPECT_EQ(options.summary_json, "");
  EXPECT_EQ(options.progress, TrainOptions::Progress::kAuto);
  EXPECT_EQ(options.pipeline_stages, 1);
  EXPECT_EQ(options.micro_batches, 1);
  EXPECT_EQ(options.schedule, chorus::torch::PipelineSchedule::k1F1B);
  EXPECT_EQ(options.pipeline_trace, "");
  EXPECT_FALSE(options.pipelined());
}

TEST(TrainOptions, PipelineFlags) {
  const TrainOptions options = parse({"--pipeline-stages", "2", "--micro-batches", "4", "--schedule",
                                      "gpipe", "--pipeline-trace", "/t.json"});
  EXPECT_TRUE(options.pipelined());
  EXPECT_EQ(options.pipeline_stages, 2);
  EXPECT_EQ(options.micro_batches, 4);
  EXPECT_EQ(options.schedule, chorus::torch::PipelineSchedule::kGPipe);
  EXPECT_EQ(options.pipeline_trace, "/t.json");
  EXPECT_EQ(parse({"--pipeline-stages", "4", "--schedule", "1f1b"}).schedule,
            chorus::torch::PipelineSchedule::k1F1B);
}

TEST(TrainOptions, BadPipelineOptionsAreClearErrors) {
  EXPECT_EQ(parse_error({"--pipeline-stages", "0"}),
            "--pipeline-stages=0 is invalid: expected an integer from 1 to 64");
  EXPECT_EQ(parse_error({"--micro-batches", "0"}),
            "--micro-batches=0 is invalid: expected an integer from 1 to 65536");
  EXPECT_EQ(parse_error({"--schedule", "zero-bubble"}),
            "--schedule=zero-bubble is invalid: expected gpipe or 1f1b");
  EXPECT_EQ(parse_error({"--pipeline-stages", "2", "--micro-batches", "3"}),
            "--micro-batches=3 does not divide --batch-size=64: expected a number of micro-batches "
            "that divides the batch of one pipeline");
  EXPECT_EQ(parse_error({"--micro-batches", "2"}),
            "--micro-batches=2 needs --pipeline-stages > 1 (for gradient accumulation without a "
            "pipeline use --accumulate)");
  EXPECT_EQ(parse_error({"--pipeline-trace", "/t.json"}), "--pipeline-trace needs --pipeline-stages > 1");
  EXPECT_EQ(parse_error({"--pipeline-stages", "2", "--checkpoint-dir", "/c"}),
            "--checkpoint-dir cannot be combined with --pipeline-stages > 1");
  EXPECT_EQ(parse_error({"--pipeline-stages", "2", "--clip-grad-norm", "1"}),
            "--clip-grad-norm cannot be combined with --pipeline-stages > 1");
  EXPECT_EQ(parse_error({"--pipeline-stages", "2", "--accumulate", "2"}),
            "--accumulate cannot be combined with --pipeline-stages > 1 (micro-batches accumulate "
            "already)");
}

TEST(TrainOptions, EveryFlag) {
  const TrainOptions options =
      parse({"--epochs", "7", "--batch-size=32", "--lr", "0.01", "--seed", "18446744073709551615",
             "--data-dir", "/d", "--model", "cnn", "--checkpoint-dir", "/c", "--resume",
             "--early-stopping-patience", "2", "--clip-grad-norm", "1.5", "--accumulate", "4",
             "--compression", "bf16", "--threads", "3", "--summary-json", "/s.json",
             "--progress", "epochs"});
  EXPECT_EQ(options.epochs, 7);
  EXPECT_EQ(options.batch_size, 32);
  EXPECT_EQ(options.lr, 0.01);
  EXPECT_EQ(options.seed, 18446744073709551615ull);
  EXPECT_EQ(options.data_dir, "/d");
  EXPECT_EQ(options.model, train_mnist::ModelKind::kCnn);
  EXPECT_EQ(options.checkpoint_dir, "/c");
  EXPECT_TRUE(options.resume);
  EXPECT_EQ(options.early_stopping_patience, 2);
  EXPECT_EQ(options.clip_grad_norm, 1.5);
  EXPECT_EQ(options.accumulate, 4);
  EXPECT_EQ(options.compression, chorus::torch::Compression::kBF16);
  EXPECT_EQ(options.threads, 3);
  EXPECT_EQ(options.summary_json, "/s.json");
  EXPECT_EQ(options.progress, TrainOptions::Progress::kEpochs);
  EXPECT_EQ(parse({"--progress", "live"}).progress, TrainOptions::Progress::kLive);
  EXPECT_EQ(parse({"--compression", "fp16"}).compression, chorus::torch::Compression::kFP16);
  EXPECT_EQ(parse({"--amp", "bf16"}).amp, chorus::torch::AmpMode::kBF16);
  EXPECT_EQ(parse({"--amp", "fp16"}).amp, chorus::torch::AmpMode::kFP16);
}

TEST(TrainOptions, HelpListsTheOptions) {
  const auto parsed = train_mnist::parse_train_options({"--help"});
  EXPECT_FALSE(parsed.options.has_value());
  for (const char* flag : {"--epochs", "--batch-size", "--lr", "--seed", "--data-dir", "--model",
                           "--checkpoint-dir", "--resume", "--early-stopping-patience",
                           "--clip-grad-norm", "--accumulate", "--compression", "--threads", "--warmup-epochs",
                           "--amp", "--summary-json", "--progress"}) {
    EXPECT_THAT(parsed.help, HasSubstr(flag));
  }
}

TEST(TrainOptions, BadValuesNameTheFlagAndTheAcceptedValues) {
  EXPECT_EQ(parse_error({"--epochs", "0"}), "--epochs=0 is invalid: expected an integer from 1 to 100000");
  EXPECT_EQ(parse_error({"--epochs", "-3"}), "--epochs=-3 is invalid: expected an integer from 1 to 100000");
  EXPECT_EQ(parse_error({"--batch-size", "12x"}),
            "--batch-size=12x is invalid: expected an integer from 1 to 65536");
  EXPECT_EQ(parse_error({"--lr", "0"}), "--lr=0 is invalid: expected a number above 0 to 10");
  EXPECT_EQ(parse_error({"--lr", "nan"}), "--lr=nan is invalid: expected a number above 0 to 10");
  EXPECT_EQ(parse_error({"--seed", "1e3"}),
            "--seed=1e3 is invalid: expected an integer from 0 to 18446744073709551615");
  EXPECT_EQ(parse_error({"--seed", "18446744073709551616"}),
            "--seed=18446744073709551616 is invalid: expected an integer from 0 to 18446744073709551615");
  EXPECT_EQ(parse_error({"--model", "rnn"}), "--model=rnn is invalid: expected mlp or cnn");
  EXPECT_EQ(parse_error({"--compression", "zip"}), "--compression=zip is invalid: expected none, fp16 or bf16");
  EXPECT_EQ(parse_error({"--amp", "fp32"}), "--amp=fp32 is invalid: expected off, bf16 or fp16");
  EXPECT_EQ(parse_error({"--amp", "bf16", "--pipeline-stages", "2"}),
            "--amp cannot be combined with --pipeline-stages > 1");
  EXPECT_EQ(parse_error({"--accumulate", "0"}), "--accumulate=0 is invalid: expected an integer from 1 to 1024");
  EXPECT_EQ(parse_error({"--threads", "0"}), "--threads=0 is invalid: expected an integer from 1 to 1024");
  EXPECT_EQ(parse_error({"--clip-grad-norm", "-1"}),
            "--clip-grad-norm=-1 is invalid: expected a number from 0 to 1e+09");
  EXPECT_EQ(parse_error({"--warmup-epochs", "-1"}),
            "--warmup-epochs=-1 is invalid: expected a number from 0 to 1000");
  EXPECT_EQ(parse_error({"--early-stopping-patience", "two"}),
            "--early-stopping-patience=two is invalid: expected an integer from 0 to 100000");
  EXPECT_EQ(parse_error({"--data-dir", ""}), "--data-dir= is invalid: expected a folder with the MNIST IDX files");
  EXPECT_EQ(parse_error({"--progress", "bar"}), "--progress=bar is invalid: expected auto, live or epochs");
  EXPECT_EQ(parse_error({"--resume"}),
            "--resume needs --checkpoint-dir (the folder whose newest checkpoint to continue from)");
}

TEST(TrainOptions, UnknownOrIncompleteFlags) {
  EXPECT_THAT(parse_error({"--epoch", "3"}), HasSubstr("unrecognised option '--epoch'"));
  EXPECT_THAT(parse_error({"--epoch", "3"}), HasSubstr("train_mnist --help lists the options"));
  EXPECT_THAT(parse_error({"--epochs"}), HasSubstr("--epochs"));
  EXPECT_EQ(parse_error({"--epochs", "2", "extra"}),
            "Unexpected argument 'extra': train_mnist takes options only (train_mnist --help lists them)");
}

TEST(TrainOptions, LoaderFlags) {
  const TrainOptions defaults = parse({});
  EXPECT_EQ(defaults.loader, TrainOptions::Loader::kPrefetch);
  EXPECT_EQ(defaults.loader_workers, 1);
  EXPECT_EQ(defaults.prefetch_depth, 4);
  const TrainOptions options = parse({"--loader", "preloaded", "--loader-workers", "3", "--prefetch-depth=8"});
  EXPECT_EQ(options.loader, TrainOptions::Loader::kPreloaded);
  EXPECT_EQ(options.loader_workers, 3);
  EXPECT_EQ(options.prefetch_depth, 8);
  EXPECT_EQ(parse_error({"--loader", "tfdata"}), "--loader=tfdata is invalid: expected prefetch or preloaded");
  EXPECT_EQ(parse_error({"--loader-workers", "0"}),
            "--loader-workers=0 is invalid: expected an integer from 1 to 64");
  EXPECT_EQ(parse_error({"--prefetch-depth", "0"}),
            "--prefetch-depth=0 is invalid: expected an integer from 1 to 1024");
}

TEST(TrainOptions, ElasticFlags) {
  EXPECT_FALSE(parse({}).elastic);
  const TrainOptions defaults = parse({"--elastic"});
  EXPECT_TRUE(defaults.elastic);
  EXPECT_EQ(defaults.commit_every, 20);
  EXPECT_EQ(defaults.elastic_dir, "");
  const TrainOptions o = parse({"--elastic", "--commit-every", "5", "--elastic-dir", "/scratch/c"});
  EXPECT_EQ(o.commit_every, 5);
  EXPECT_EQ(o.elastic_dir, "/scratch/c");
}

TEST(TrainOptions, BadElasticOptionsAreClearErrors) {
  EXPECT_EQ(parse_error({"--elastic", "--commit-every", "0"}),
            "--commit-every=0 is invalid: expected an integer from 1 to 1000000");
  EXPECT_EQ(parse_error({"--commit-every", "5"}), "--commit-every needs --elastic");
  EXPECT_EQ(parse_error({"--elastic-dir", "/c"}), "--elastic-dir needs --elastic");
  EXPECT_EQ(parse_error({"--elastic", "--pipeline-stages", "2"}),
            "--elastic cannot be combined with --pipeline-stages > 1");
  EXPECT_EQ(parse_error({"--elastic", "--checkpoint-dir", "/c", "--resume"}),
            "--elastic cannot be combined with --resume (an elastic run resumes from its own commits)");
}

}  // namespace
}  // namespace train_mnist_test
