// What rank 0 prints, the summary JSON, and the models' shapes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "chorus/torch/checkpoint/model_signature.h"
#include "models.h"
#include "progress.h"
#include "run_summary.h"
#include "test_files.h"

namespace train_mnist_test {
namespace {

using ::testing::HasSubstr;

train_mnist::EpochReport sample_report() {
  train_mnist::EpochReport report;
  report.epoch = 2;
  report.epochs = 5;
  report.train_loss = 0.28171;
  report.test_loss = 0.24019;
  report.test_accuracy = 0.9285;
  report.samples_per_second = 41234.4;
  report.seconds = 0.4249;
  return report;
}

TEST(Progress, EpochLine) {
  auto report = sample_report();
  EXPECT_EQ(train_mnist::format_epoch_line(report),
            "epoch 2/5  train loss 0.2817  test loss 0.2402  test accuracy 0.9285  41234 samples/s  0.42 s");
  report.best = true;
  EXPECT_THAT(train_mnist::format_epoch_line(report), ::testing::EndsWith("0.42 s  *best"));
}

TEST(Progress, OnlyTheEnabledRankPrints) {
  std::ostringstream out;
  train_mnist::ProgressPrinter printer(out, /*enabled=*/false, /*live=*/true);
  printer.start_epoch(1, 5, 100);
  printer.update(100, 0.5);
  printer.finish_epoch(sample_report());
  printer.message("hello");
  EXPECT_EQ(out.str(), "");
}

TEST(Progress, WithoutATerminalOnlyEpochLines) {
  std::ostringstream out;
  train_mnist::ProgressPrinter printer(out, /*enabled=*/true, /*live=*/false);
  printer.start_epoch(2, 5, 100);
  printer.update(50, 0.5);
  printer.update(100, 0.4);
  printer.finish_epoch(sample_report());
  EXPECT_EQ(out.str(), train_mnist::format_epoch_line(sample_report()) + "\n");
}

TEST(Progress, LiveLineIsRewrittenAndClearedBeforeTheEpochLine) {
  std::ostringstream out;
  train_mnist::ProgressPrinter printer(out, /*enabled=*/true, /*live=*/true);
  printer.start_epoch(2, 5, 100);
  printer.update(100, 0.4567);  // the epoch's last batch always draws
  printer.finish_epoch(sample_report());
  const std::string text = out.str();
  const std::string live = "epoch 2/5  100/100 samples  ";
  ASSERT_EQ(text.rfind(live, 0), 0u) << text;
  EXPECT_THAT(text, HasSubstr("samples/s  loss 0.4567"));
  const size_t live_end = text.find('\r');
  ASSERT_NE(live_end, std::string::npos);
  // Cleared with '\r', spaces over the whole live line, '\r'; then the epoch line.
  EXPECT_EQ(text.substr(live_end), "\r" + std::string(live_end, ' ') + "\r" +
                                       train_mnist::format_epoch_line(sample_report()) + "\n");
}

TEST(RunSummary, Json) {
  train_mnist::RunSummary summary;
  summary.world_size = 2;
  summary.model = "mlp";
  summary.data_parallel_size = 2;
  summary.epochs_run = 5;
  summary.epochs_this_run = 3;
  summary.final_test_accuracy = 0.9375;
  summary.final_test_loss = 0.25;
  summary.best_epoch = 4;
  summary.best_test_loss = 0.125;
  summary.samples_per_second = 1000;
  summary.wall_seconds = 2.5;
  summary.mean_step_seconds = 0.25;
  summary.amp = "bf16";
  summary.amp_skipped_steps = 3;
  summary.amp_final_scale = 32768;
  summary.parameter_digests = {0xabcdef0123456789ull, 0x1ull};
  const std::string text = train_mnist::to_json(summary);
  const auto json = nlohmann::ordered_json::parse(text);
  EXPECT_EQ(json, nlohmann::ordered_json::parse(R"({
      "world_size": 2, "model": "mlp", "pipeline_stages": 1, "micro_batches": 1, "schedule": "none",
      "data_parallel_size": 2, "epochs_run": 5, "epochs_this_run": 3, "stopped_early": false,
      "final_test_accuracy": 0.9375, "final_test_loss": 0.25, "best_epoch": 4, "best_test_loss": 0.125,
      "samples_per_second": 1000, "wall_seconds": 2.5, "mean_step_seconds": 0.25, "amp": "bf16",
      "amp_skipped_steps": 3, "amp_final_scale": 32768,
      "parameter_digests": ["abcdef0123456789", "1"]})"))
      << text;  // ordered_json: equal keys in the same order
  EXPECT_EQ(text.back(), '\n');
  summary.final_test_loss = NAN;
  summary.best_test_loss = INFINITY;
  summary.model = "a \"quoted\" name";
  const auto special = nlohmann::json::parse(train_mnist::to_json(summary));
  EXPECT_TRUE(special.at("final_test_loss").is_null());
  EXPECT_TRUE(special.at("best_test_loss").is_null());
  EXPECT_EQ(special.at("model"), summary.model);
}

TEST(Models, ReferenceMlpHas101770Parameters) {
  torch::manual_seed(0);
  const auto mlp = train_mnist::make_model(train_mnist::ModelKind::kMlp);
  int64_t count = 0;
  for (const auto& p : mlp->parameters()) count += p.numel();
  EXPECT_EQ(count, 784 * 128 + 128 + 128 * 10 + 10);
  EXPECT_EQ(mlp->forward(torch::zeros({3, 1, 28, 28})).sizes().vec(), (std::vector<int64_t>{3, 10}));
}

TEST(Models, MlpComputesLinearReluLinear) {
  torch::manual_seed(0);
  auto mlp = train_mnist::make_model(train_mnist::ModelKind::kMlp);
  auto params = mlp->named_parameters();
  const torch::Tensor x = torch::randn({4, 1, 28, 28});
  const torch::Tensor hidden =
      torch::clamp_min(x.reshape({4, 784}).matmul(params["hidden.weight"].t()) + params["hidden.bias"], 0);
  const torch::Tensor expected = hidden.matmul(params["output.weight"].t()) + params["output.bias"];
  EXPECT_TRUE(torch::allclose(mlp->forward(x), expected, 1e-5, 1e-6));
}

TEST(Models, CnnShapes) {
  torch::manual_seed(0);
  const auto cnn = train_mnist::make_model(train_mnist::ModelKind::kCnn);
  EXPECT_EQ(cnn->forward(torch::zeros({2, 1, 28, 28})).sizes().vec(), (std::vector<int64_t>{2, 10}));
  EXPECT_EQ(chorus::torch::ModelSignature::of(*cnn, "cnn").serialize(),
            "model cnn\nparameter conv1.weight Float 10 1 5 5\nparameter conv1.bias Float 10\n"
            "parameter conv2.weight Float 20 10 5 5\nparameter conv2.bias Float 20\n"
            "parameter hidden.weight Float 50 320\nparameter hidden.bias Float 50\n"
            "parameter output.weight Float 10 50\nparameter output.bias Float 10\n");
}

TEST(Models, KindNames) {
  EXPECT_EQ(train_mnist::parse_model_kind("cnn"), train_mnist::ModelKind::kCnn);
  EXPECT_STREQ(train_mnist::model_kind_name(train_mnist::ModelKind::kMlp), "mlp");
  EXPECT_EQ(error_of([] { train_mnist::parse_model_kind("vit"); }), "Unknown model 'vit': expected mlp or cnn");
}

}  // namespace
}  // namespace train_mnist_test
