// ElasticState across ranks, each rank standing for a host: with
// every_rank_writes each rank keeps its own commit folder, as each host's
// local rank 0 does on its own disk. The folders are then changed as lost or
// failing hosts would leave them: the newest commit only on a rank other
// than rank 0, a torn newest commit (cut short, corrupt, never written) on
// every rank that has one. restore() must give every rank the newest
// complete commit, equal bit for bit to a reference each rank recomputes on
// its own with plain LibTorch; a commit of another model is refused on every
// rank with the difference named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <type_traits>
#include <string>

#include <torch/torch.h>

#include "chorus/checked_file.h"
#include "chorus/torch/checkpoint/elastic_state.h"
#include "support/chorus_error_of.h"
#include "support/harness.h"
#include "torch_test_support.h"

namespace chorus_test {
namespace {

namespace ct = chorus::torch;
namespace fs = std::filesystem;
using chorus_torch_test::find_param_state;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// Linear -> BatchNorm (buffers) -> Linear with Adam, trained on batches that
// depend only on the step: every rank holds the same state after the same
// steps, as data-parallel replicas do, without any communication.
struct Trainee {
  torch::nn::Sequential model;
  torch::optim::Adam adam;
  ct::CheckpointExtras extras;

  explicit Trainee(uint64_t seed, int64_t hidden = 6)
      : model(make(seed, hidden)), adam(model->parameters(), torch::optim::AdamOptions(0.01)) {}
  static torch::nn::Sequential make(uint64_t seed, int64_t hidden) {
    torch::manual_seed(seed);
    return torch::nn::Sequential(torch::nn::Linear(4, hidden), torch::nn::BatchNorm1d(hidden),
                                 torch::nn::Linear(hidden, 3));
  }
  ct::CheckpointContents contents() {
    ct::CheckpointContents c(*model, "net");
    c.with_optimizer(adam).with_extras(extras);
    return c;
  }
  void step(int64_t i) {
    model->train();
    torch::manual_seed(100 + i);
    const torch::Tensor x = torch::randn({8, 4});
    const torch::Tensor y = torch::randint(0, 3, {8}, torch::kInt64);
    adam.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    adam.step();
  }
};

bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  const torch::Tensor ca = a.detach().contiguous(), cb = b.detach().contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

// Parameters, buffers and Adam's moments and step counts, bit for bit.
::testing::AssertionResult same_state(Trainee& a, Trainee& b) {
  const auto pa = a.model->named_parameters(), pb = b.model->named_parameters();
  for (const auto& item : pa) {
    if (!same_bits(item.value(), pb[item.key()])) return ::testing::AssertionFailure() << "parameter " << item.key();
  }
  const auto ba = a.model->named_buffers(), bb = b.model->named_buffers();
  for (const auto& item : ba) {
    if (!same_bits(item.value(), bb[item.key()])) return ::testing::AssertionFailure() << "buffer " << item.key();
  }
  const auto& qa = a.adam.param_groups()[0].params();
  const auto& qb = b.adam.param_groups()[0].params();
  for (size_t i = 0; i < qa.size(); ++i) {
    const auto ia = find_param_state(a.adam.state(), qa[i]);
    const auto ib = find_param_state(b.adam.state(), qb[i]);
    if ((ia == a.adam.state().end()) != (ib == b.adam.state().end())) {
      return ::testing::AssertionFailure() << "Adam state of parameter " << i << " on one side only";
    }
    if (ia == a.adam.state().end()) continue;
    const auto& sa = static_cast<const torch::optim::AdamParamState&>(*ia->second);
    const auto& sb = static_cast<const torch::optim::AdamParamState&>(*ib->second);
    if (sa.step() != sb.step() || !same_bits(sa.exp_avg(), sb.exp_avg()) ||
        !same_bits(sa.exp_avg_sq(), sb.exp_avg_sq())) {
      return ::testing::AssertionFailure() << "Adam state of parameter " << i;
    }
  }
  return ::testing::AssertionSuccess();
}

// The state after commit k of run(): steps 0..k.
Trainee reference_at(int64_t commit) {
  Trainee reference(1);
  for (int64_t i = 0; i <= commit; ++i) reference.step(i);
  return reference;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class ElasticStateParallel : public ChorusSuite {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    ChorusSuite::SetUpTestSuite();
  }
  void SetUp() override {
    ChorusSuite::SetUp();
    root_ = (fs::temp_directory_path() / ("elastic_state_" + shared_token())).string();
    test_barrier();
  }
  void TearDown() override {
    test_barrier();
    if (rank() == 0) fs::remove_all(root_);
  }
  ct::ElasticStateOptions options(const std::string& name) const {
    ct::ElasticStateOptions o;
    o.directory = root_ + "/" + name;
    o.every_rank_writes = true;  // each rank a host with its own disk
    o.keep = 3;
    o.name = "elastic_test." + name;
    return o;
  }
  // A fresh job that commits after each of `commits` steps (commit k: after
  // steps 0..k, epoch 1, sample 10k, a value of the program's own).
  void run(const ct::ElasticStateOptions& o, int64_t commits) {
    Trainee trainee(1);
    ct::ElasticState state(trainee.contents(), o);
    ASSERT_FALSE(state.restore());
    for (int64_t k = 0; k < commits; ++k) {
      trainee.step(k);
      trainee.extras.set_double("loss", 0.25 * static_cast<double>(k));
      state.set_position(1, 10 * k);
      state.commit();
      ASSERT_EQ(state.last_commit(), k);
    }
    // The position keys leave the program's extras again.
    EXPECT_EQ(trainee.extras.keys(), std::vector<std::string>{"loss"});
  }
  // A restarted job on every rank, starting from other parameters each.
  void expect_restored(const ct::ElasticStateOptions& o, int64_t commit) {
    Trainee restored(50 + static_cast<uint64_t>(rank()));
    ct::ElasticState state(restored.contents(), o);
    ASSERT_TRUE(state.restore());
    EXPECT_EQ(state.last_commit(), commit);
    EXPECT_EQ(state.epoch(), 1);
    EXPECT_EQ(state.sample(), 10 * commit);
    EXPECT_EQ(state.committed_size(), size());
    EXPECT_EQ(restored.extras.keys(), std::vector<std::string>{"loss"});
    EXPECT_EQ(restored.extras.get_double("loss"), 0.25 * static_cast<double>(commit));
    Trainee reference = reference_at(commit);
    EXPECT_TRUE(same_state(restored, reference)) << "rank " << rank() << ", commit " << commit;
    // And it trains on as the reference does.
    restored.step(commit + 1);
    reference.step(commit + 1);
    EXPECT_TRUE(same_state(restored, reference)) << "rank " << rank() << " after one more step";
    // The next commit follows the restored one.
    state.commit();
    EXPECT_EQ(state.last_commit(), commit + 1);
  }
  std::string folder(const ct::ElasticStateOptions& o) const {
    Trainee scratch(1);
    return ct::ElasticState(scratch.contents(), o).host_directory();
  }
  static std::string commit_path(const std::string& folder, int64_t id) {
    char name[48];
    std::snprintf(name, sizeof(name), "/commit-%012lld.ckpt", static_cast<long long>(id));
    return folder + name;
  }
  std::string root_;
};

TEST_F(ElasticStateParallel, EveryRankWritesItsOwnFolder) {
  const auto o = options("own");
  run(o, 4);
  const std::string mine = folder(o);
  EXPECT_THAT(mine, HasSubstr("/rank-" + std::to_string(rank())));
  EXPECT_FALSE(fs::exists(commit_path(mine, 0))) << "keep = 3";
  for (int64_t k = 1; k < 4; ++k) EXPECT_TRUE(fs::exists(commit_path(mine, k))) << k;
  EXPECT_EQ(std::distance(fs::directory_iterator(mine), {}), 3) << "a temporary file was left";
  expect_restored(o, 3);
}

// Rank 0's host lost its disk, the middle ranks' hosts stopped before the
// newest commit: only the last rank has commit 2, and every rank gets it.
TEST_F(ElasticStateParallel, TheNewestCommitOnlyOnAnotherRankReachesEveryRank) {
  const auto o = options("elsewhere");
  run(o, 3);
  const std::string mine = folder(o);
  if (rank() == 0) fs::remove_all(mine);
  if (rank() != 0 && rank() != size() - 1) fs::remove(commit_path(mine, 2));
  test_barrier();
  expect_restored(o, 2);
}

// The failure cut commit 2 short everywhere it was begun: corrupt on rank 0,
// truncated on the last rank, never written on the others. Commit 1, the
// newest complete one, is restored; the next commit replaces the torn ones.
TEST_F(ElasticStateParallel, ATornNewestCommitFallsBackToTheOlderCompleteOne) {
  const auto o = options("torn");
  run(o, 3);
  const std::string mine = folder(o);
  const std::string newest = commit_path(mine, 2);
  std::ifstream in(newest, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  ASSERT_GT(bytes.size(), 200u);
  if (rank() == 0) {
    bytes[bytes.size() / 2] ^= 0x10;
    write_file(newest, bytes);
  } else if (rank() == size() - 1) {
    write_file(newest, bytes.substr(0, bytes.size() - 100));
  } else {
    fs::remove(newest);
  }
  test_barrier();
  expect_restored(o, 1);  // commits 2 again
  const chorus::CheckedFileFormat format = ct::checkpoint_format();
  std::ifstream again(newest, std::ios::binary);
  const std::string rewritten((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  EXPECT_NO_THROW(chorus::open_checked(format, rewritten, newest)) << "the torn commit 2 was not replaced";
}

TEST_F(ElasticStateParallel, WithoutACommitEveryRankTakesRankZerosState) {
  const auto o = options("fresh");
  Trainee mine(1 + static_cast<uint64_t>(rank()));
  ct::ElasticState state(mine.contents(), o);
  EXPECT_FALSE(state.restore());
  EXPECT_EQ(state.last_commit(), -1);
  Trainee rank_zero(1);
  EXPECT_TRUE(same_state(mine, rank_zero)) << "rank " << rank();
}

TEST_F(ElasticStateParallel, ACommitOfAnotherModelIsRefusedOnEveryRank) {
  const auto o = options("other_model");
  run(o, 1);
  Trainee wider(1, /*hidden=*/8);
  ct::ElasticState state(wider.contents(), o);
  EXPECT_THAT(error_of([&] { state.restore(); }),
              AllOf(HasSubstr("Elastic commit 0"), HasSubstr("was written for another model"),
                    HasSubstr("[6, 4] vs [8, 4]"), HasSubstr("holds another program's commits")));
}

// Without every_rank_writes only local rank 0 writes (one copy per host).
TEST_F(ElasticStateParallel, OneWriterPerHostByDefault) {
  auto o = options("per_host");
  o.every_rank_writes = false;
  Trainee trainee(1);
  ct::ElasticState state(trainee.contents(), o);
  EXPECT_EQ(state.is_writer(), chorus::local_rank() == 0);
  EXPECT_THAT(state.host_directory(), Not(HasSubstr("/rank-")));
  run(o, 2);
  expect_restored(o, 1);
}

}  // namespace
}  // namespace chorus_test
