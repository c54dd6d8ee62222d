// chorus::torch's checkpoints across ranks: restore_checkpoint gives every
// rank root's model, Adam, GradScaler and extras bit for bit (against a
// reference each rank recomputes on its own) and fails every rank alike;
// CheckpointManager keeps the newest N, the best by a metric (min and max,
// with min_delta) and survives a failed write on the writer; every rank can
// keep its own folder; and a run resumed from the manager's checkpoint ends
// bit-identical to an uninterrupted one (DistributedOptimizer + GradScaler +
// EarlyStopping).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <torch/torch.h>

#include "chorus/torch/checkpoint/checkpoint.h"
#include "chorus/torch/checkpoint/checkpoint_manager.h"
#include "chorus/torch/distributed_optimizer.h"
#include "chorus/torch/checkpoint/early_stopping.h"
#include "chorus/torch/state_broadcast.h"
#include "support/chorus_error_of.h"
#include "support/file_size_limit.h"
#include "support/harness.h"

namespace chorus_test {
namespace {

namespace ct = chorus::torch;
namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Linear -> BatchNorm (buffers) -> Linear, trained with Adam on data that
// depends only on the step (and, for rank_data, the rank).
struct CheckpointTrainee {
  torch::nn::Sequential model;
  torch::optim::Adam adam;
  ct::GradScaler scaler;
  ct::CheckpointExtras extras;

  explicit CheckpointTrainee(uint64_t seed, int64_t hidden = 6, ct::GradScalerOptions scaler_options = {})
      : model(make(seed, hidden)), adam(model->parameters(), torch::optim::AdamOptions(0.01)),
        scaler(scaler_options) {}
  static torch::nn::Sequential make(uint64_t seed, int64_t hidden) {
    torch::manual_seed(seed);
    return torch::nn::Sequential(torch::nn::Linear(4, hidden), torch::nn::BatchNorm1d(hidden),
                                 torch::nn::Linear(hidden, 3));
  }
  ct::CheckpointContents contents() {
    ct::CheckpointContents c(*model, "net");
    c.with_optimizer(adam).with_scaler(scaler).with_extras(extras);
    return c;
  }
  static std::pair<torch::Tensor, torch::Tensor> batch(int64_t seed) {
    torch::manual_seed(seed);
    return {torch::randn({8, 4}), torch::randint(0, 3, {8}, torch::kInt64)};
  }
  // A local step (no averaging).
  void step(int64_t i) {
    model->train();
    const auto [x, y] = batch(100 + i);
    adam.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    adam.step();
  }
};

bool same_module_state(const torch::nn::Module& a, const torch::nn::Module& b) {
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

class CheckpointParallel : public ChorusSuite {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    ChorusSuite::SetUpTestSuite();
  }
  // A folder every rank sees (same machine), made by rank 0.
  void SetUp() override {
    ChorusSuite::SetUp();
    root_ = (fs::temp_directory_path() / ("checkpoint_parallel_" + shared_token())).string();
    if (rank() == 0) fs::create_directories(root_);
    test_barrier();
  }
  void TearDown() override {
    test_barrier();
    if (rank() == 0) fs::remove_all(root_);
  }
  std::string root_;
};

TEST_F(CheckpointParallel, RestoreGivesEveryRankRootsStateBitForBit) {
  const std::string path = root_ + "/state.ckpt";
  if (rank() == 0) {
    CheckpointTrainee written(1);
    for (int i = 0; i < 3; ++i) written.step(i);
    written.scaler.load_state({512.0, 5, 2.0, 0.5, 2000});
    written.extras.set_int("epoch", 3);
    ct::save_checkpoint_file(path, written.contents());
  }
  CheckpointTrainee restored(10 + static_cast<uint64_t>(rank()));  // other parameters on every rank
  ct::restore_checkpoint(path, restored.contents());

  // The reference: each rank trains the same model itself, without the file.
  CheckpointTrainee reference(1);
  for (int i = 0; i < 3; ++i) reference.step(i);
  EXPECT_TRUE(same_module_state(*restored.model, *reference.model));
  EXPECT_EQ(restored.scaler.get_scale(), 512.0);
  EXPECT_EQ(restored.scaler.growth_tracker(), 5);
  EXPECT_EQ(restored.extras.get_int("epoch"), 3);
  // Adam's state came too: one more step stays equal.
  restored.step(3);
  reference.step(3);
  EXPECT_TRUE(same_module_state(*restored.model, *reference.model));
}

TEST_F(CheckpointParallel, RestoreErrorsFailEveryRank) {
  CheckpointTrainee run(2);
  const std::string missing = root_ + "/missing.ckpt";
  EXPECT_THAT(error_of([&] { ct::restore_checkpoint(missing, run.contents()); }),
              AllOf(HasSubstr("Cannot open checkpoint '" + missing + "'"), HasSubstr("No such file or directory")));

  const std::string path = root_ + "/c.ckpt";
  if (rank() == 0) {
    std::string bytes = ct::encode_checkpoint(run.contents());
    bytes[bytes.size() / 2] ^= 0x20;
    std::ofstream(path, std::ios::binary) << bytes;
  }
  EXPECT_THAT(error_of([&] { ct::restore_checkpoint(path, run.contents()); }),
              HasSubstr("Checkpoint '" + path + "' is corrupt"));

  // Only the last rank has another model: every rank fails with its message.
  if (rank() == 0) ct::save_checkpoint_file(path, run.contents());
  CheckpointTrainee other(3, rank() == size() - 1 ? 8 : 6);
  EXPECT_THAT(error_of([&] { ct::restore_checkpoint(path, other.contents()); }),
              HasSubstr("Checkpoint '" + path + "' was written for another model (parameter 0.weight [6, 4] vs [8, 4]"));
}

// Saves steps 1..n with `metrics`; returns save()'s answers.
std::vector<bool> save_all(ct::CheckpointManager& manager, CheckpointTrainee& run, const std::vector<double>& metrics) {
  std::vector<bool> best;
  for (size_t i = 0; i < metrics.size(); ++i) {
    run.extras.set_int("saved_step", static_cast<int64_t>(i + 1));
    best.push_back(manager.save(run.contents(), static_cast<int64_t>(i + 1), metrics[i]));
  }
  return best;
}

TEST_F(CheckpointParallel, ManagerKeepsTheNewestAndTheBest) {
  ct::CheckpointManagerOptions options;
  options.directory = root_ + "/min";
  options.keep_last = 2;
  CheckpointTrainee run(4);
  {
    ct::CheckpointManager manager(options);
    EXPECT_EQ(save_all(manager, run, {3, 1, 2, 0.5, 0.7}), (std::vector<bool>{true, true, false, true, false}));
    EXPECT_EQ(manager.best_metric(), 0.5);
  }
  if (rank() == 0) {
    EXPECT_EQ(ct::checkpoint_steps_in(options.directory), (std::vector<int64_t>{4, 5}));
    EXPECT_TRUE(fs::exists(options.directory + "/best.ckpt"));
    EXPECT_EQ(std::distance(fs::directory_iterator(options.directory), {}), 3) << "a temporary file was left";
  }
  // A new manager (a resumed run) knows the best so far from the checkpoint.
  ct::CheckpointManager resumed(options);
  CheckpointTrainee target(5);
  EXPECT_EQ(resumed.restore_latest(target.contents()), 5);
  EXPECT_EQ(target.extras.get_int("saved_step"), 5);
  EXPECT_FALSE(target.extras.contains("chorus.checkpoint_manager.step"));
  EXPECT_EQ(resumed.best_metric(), 0.5);
  EXPECT_FALSE(resumed.save(target.contents(), 6, 0.6));
  EXPECT_EQ(resumed.restore_best(target.contents()), 4);
  EXPECT_EQ(target.extras.get_int("saved_step"), 4);

  // kMax with min_delta: 1.05 is not better than 1 by more than 0.1.
  options.directory = root_ + "/max";
  options.mode = ct::MetricMode::kMax;
  options.min_delta = 0.1;
  ct::CheckpointManager highest(options);
  EXPECT_EQ(save_all(highest, run, {1, 1.05, 2}), (std::vector<bool>{true, false, true}));

  // No checkpoint at all: every rank is told so.
  options.directory = root_ + "/empty";
  ct::CheckpointManager empty(options);
  EXPECT_THAT(error_of([&] { empty.restore_latest(target.contents()); }),
              HasSubstr("No checkpoint in '" + options.directory + "' to resume from"));
}

TEST_F(CheckpointParallel, FailedWriteOnTheWriterFailsEveryRankAndKeepsThePreviousCheckpoint) {
  ct::CheckpointManagerOptions options;
  options.directory = root_ + "/w";
  options.keep_last = 1;
  ct::CheckpointManager manager(options);
  CheckpointTrainee run(6);
  manager.save(run.contents(), 1, 1.0);
  CheckpointTrainee before(6);
  std::string error;
  {
    FileSizeLimit limit(512, rank() == 0);
    run.step(0);
    error = error_of([&] { manager.save(run.contents(), 2, 0.5); });
  }
  EXPECT_THAT(error, AllOf(HasSubstr("Cannot write checkpoint '" + options.directory + "/checkpoint-2.ckpt'"),
                           HasSubstr("File too large")));
  EXPECT_EQ(manager.best_metric(), 1.0) << "a failed save must not count as the best";
  if (rank() == 0) {
    EXPECT_EQ(ct::checkpoint_steps_in(options.directory), std::vector<int64_t>{1});
    EXPECT_EQ(std::distance(fs::directory_iterator(options.directory), {}), 2) << "checkpoint-1 and best only";
  }
  CheckpointTrainee target(7);
  EXPECT_EQ(manager.restore_latest(target.contents()), 1);
  EXPECT_TRUE(same_module_state(*target.model, *before.model));
}

TEST_F(CheckpointParallel, EveryRankWritesAndReadsItsOwnFolder) {
  ct::CheckpointManagerOptions options;
  options.directory = root_ + "/rank-" + std::to_string(rank());
  options.every_rank_writes = true;
  CheckpointTrainee mine(20 + static_cast<uint64_t>(rank()));
  mine.extras.set_int("rank", rank());
  ct::CheckpointManager manager(options);
  manager.save(mine.contents(), 1);
  CheckpointTrainee target(99);
  EXPECT_EQ(manager.restore_latest(target.contents()), 1);
  EXPECT_TRUE(same_module_state(*target.model, *mine.model));
  EXPECT_EQ(target.extras.get_int("rank"), rank());
  // One rank's folder lost its file: every rank fails, naming it.
  test_barrier();
  if (rank() == size() - 1) fs::remove(manager.checkpoint_path(1));
  EXPECT_THAT(error_of([&] { manager.restore_latest(target.contents()); }),
              HasSubstr("No checkpoint in '" + root_ + "/rank-" + std::to_string(size() - 1) + "'"));
}

TEST_F(CheckpointParallel, ResumeStartsFreshWithoutACheckpointAndRestoresWithOne) {
  // One writer: an empty folder is a fresh start (step 0, state untouched).
  ct::CheckpointManagerOptions shared;
  shared.directory = root_ + "/shared";
  ct::CheckpointManager manager(shared);
  CheckpointTrainee fresh(30 + static_cast<uint64_t>(rank()));
  const CheckpointTrainee untouched(30 + static_cast<uint64_t>(rank()));
  EXPECT_EQ(manager.resume(fresh.contents()), 0);
  EXPECT_TRUE(same_module_state(*fresh.model, *untouched.model));
  CheckpointTrainee saved(40);
  saved.step(1);
  manager.save(saved.contents(), 5);
  EXPECT_EQ(manager.resume(fresh.contents()), 5);
  EXPECT_TRUE(same_module_state(*fresh.model, *saved.model));

  // Own folders: none anywhere is a fresh start; some with and some
  // without fails every rank naming one of each.
  ct::CheckpointManagerOptions own;
  own.directory = root_ + "/own-" + std::to_string(rank());
  own.every_rank_writes = true;
  ct::CheckpointManager mine(own);
  EXPECT_EQ(mine.resume(fresh.contents()), 0);
  if (rank() == 0) fs::create_directories(own.directory);
  if (rank() == 0) ct::save_checkpoint_file(mine.checkpoint_path(3), saved.contents());
  test_barrier();
  EXPECT_THAT(error_of([&] { mine.resume(fresh.contents()); }),
              AllOf(HasSubstr("rank 0 has some"), HasSubstr("rank 1 has none"),
                    HasSubstr("expected every rank to have checkpoints or none")));
}

// The resume case: a small model, rank-dependent batches averaged by a
// DistributedOptimizer, a GradScaler whose scale grows every 3 finite steps,
// early stopping (never triggered) and the manager, one save per epoch. The
// interrupted run's state stays alive to compare the restored state with.
struct Training {
  CheckpointTrainee run;
  ct::DistributedOptimizer optimizer;
  ct::EarlyStopping stopping;
  explicit Training(uint64_t seed)
      : run(seed, 6, scaler_options()), optimizer(run.adam, run.model->named_parameters(), {}),
        stopping(stopping_options()) {}
  static ct::GradScalerOptions scaler_options() {
    ct::GradScalerOptions options;
    options.init_scale = 256;
    options.growth_interval = 3;
    return options;
  }
  static ct::EarlyStoppingOptions stopping_options() {
    ct::EarlyStoppingOptions options;
    options.patience = 100;
    return options;
  }
  void epochs(ct::CheckpointManager& manager, int64_t from, int64_t to) {
    for (int64_t e = from; e < to; ++e) {
      double loss_sum = 0;
      for (int64_t i = 0; i < 4; ++i) {
        run.model->train();
        const auto [x, y] = CheckpointTrainee::batch(1000 * e + 10 * i + chorus::rank());
        optimizer.zero_grad();
        const torch::Tensor loss = torch::nn::functional::cross_entropy(run.model->forward(x), y);
        run.scaler.scale(loss).backward();
        run.scaler.step(optimizer);
        run.scaler.update();
        loss_sum += loss.item<double>();
      }
      // BatchNorm's running statistics saw this rank's batches only: take
      // rank 0's (as PyTorch's DDP broadcasts buffers), so replicas agree.
      ct::broadcast_parameters(*run.model, 0);
      stopping.update(loss_sum / 4);
      stopping.save(run.extras);
      manager.save(run.contents(), e + 1, stopping.last());
    }
  }
};

TEST_F(CheckpointParallel, ResumeEqualsAnUninterruptedRun) {
  ct::CheckpointManagerOptions options;
  options.directory = root_ + "/uninterrupted";
  Training uninterrupted(30);
  {
    ct::CheckpointManager manager(options);
    uninterrupted.epochs(manager, 0, 4);
  }
  options.directory = root_ + "/interrupted";
  Training first(30);
  {
    ct::CheckpointManager manager(options);
    first.epochs(manager, 0, 2);
  }
  Training resumed(77);  // other initial parameters, fresh Adam and scaler
  ct::CheckpointManager manager(options);
  const int64_t step = manager.restore_latest(resumed.run.contents());
  ASSERT_EQ(step, 2);
  EXPECT_TRUE(same_module_state(*resumed.run.model, *first.run.model));
  EXPECT_EQ(resumed.run.scaler.get_scale(), first.run.scaler.get_scale());
  resumed.stopping.load(resumed.run.extras);
  EXPECT_EQ(resumed.stopping.updates(), 2);
  resumed.epochs(manager, step, 4);

  EXPECT_TRUE(same_module_state(*resumed.run.model, *uninterrupted.run.model));
  EXPECT_EQ(resumed.run.scaler.get_scale(), uninterrupted.run.scaler.get_scale());
  EXPECT_EQ(resumed.run.scaler.growth_tracker(), uninterrupted.run.scaler.growth_tracker());
  EXPECT_GT(uninterrupted.run.scaler.get_scale(), 256) << "the scale never grew: its state proves nothing";
  EXPECT_EQ(resumed.stopping.best(), uninterrupted.stopping.best());
  EXPECT_EQ(resumed.stopping.best_update(), uninterrupted.stopping.best_update());
  EXPECT_EQ(manager.best_metric(), uninterrupted.stopping.best());
}

}  // namespace
}  // namespace chorus_test
