// The start-up probe (ops/shm/shm_probe.h) under real mpirun: ranks whose
// own measurements disagree still choose alike (CHORUS_TEST_SHM_PROBE_SKEW
// makes one rank's times of a path 1000x slower; the slowest rank's times
// decide, so the expected choice is known); a cached choice is used without
// measuring, a corrupt cache is measured again and rewritten; and the
// engine's plain and streaming stores give the MPI backend's very bits.
#include <gtest/gtest.h>
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_datatypes.h"
#include "ops/mpi/mpi_setup_channel.h"
#include "ops/shm/shm_backend.h"
#include "ops/shm/shm_probe.h"
#include "ops/shm/shm_probe_cache.h"

namespace chorus {
namespace {

constexpr std::chrono::milliseconds kTimeout{60000};

class ShmProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    ASSERT_TRUE(types_.create().ok());
    // A cache folder of this job's own, named by rank 0.
    char folder[] = "/tmp/chorus-shm-probe-test-XXXXXX";
    if (rank_ == 0) {
      ASSERT_NE(mkdtemp(folder), nullptr);
    }
    MPI_Bcast(folder, sizeof(folder), MPI_CHAR, 0, MPI_COMM_WORLD);
    folder_ = folder;
    setenv("XDG_CACHE_HOME", folder_.c_str(), 1);
    MpiSetupChannel world(MPI_COMM_WORLD);
    std::unique_ptr<ShmGroup> group;
    const Status status = ShmGroup::create(world, ShmAllreduce::data_bytes(size_, options_.chunk_bytes), kTimeout,
                                           &group, "probe");
    ASSERT_TRUE(status.ok()) << status.to_string();
    selection_.mode = AutoOnOff::kAuto;
    selection_.ranks = size_;
    backend_ = std::make_unique<ShmBackend>(std::make_unique<MpiBackend>(MPI_COMM_WORLD, &types_), std::move(group),
                                            options_, selection_);
  }
  void TearDown() override {
    backend_.reset();
    unsetenv("CHORUS_TEST_SHM_PROBE_SKEW");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank_ == 0) std::system(("rm -rf '" + folder_ + "'").c_str());
  }

  // Runs the probe with `skew` on rank `skewed` only.
  ShmProbeChoice probe(ShmProbeMode mode, int skewed, const char* skew) {
    if (rank_ == skewed) {
      setenv("CHORUS_TEST_SHM_PROBE_SKEW", skew, 1);
    } else {
      unsetenv("CHORUS_TEST_SHM_PROBE_SKEW");
    }
    Config config;
    config.shm_probe = mode;
    ShmProbeChoice choice;
    const Status status =
        probe_and_choose(config, MPI_COMM_WORLD, rank_, size_, options_.chunk_bytes, selection_, backend_.get(), &choice);
    EXPECT_TRUE(status.ok()) << status.to_string();
    return choice;
  }

  // Every rank's choice, as rank 0 sees them: all equal to rank 0's.
  void expect_same_on_every_rank(const ShmProbeChoice& choice) {
    std::string mine = choice.describe() + "|" + choice.serialize();
    mine.resize(4096, ' ');
    std::vector<char> all(static_cast<size_t>(size_) * mine.size());
    MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, all.data(), static_cast<int>(mine.size()),
                  MPI_CHAR, MPI_COMM_WORLD);
    for (int r = 1; r < size_; ++r) {
      EXPECT_EQ(std::string(all.data() + r * mine.size(), mine.size()), std::string(all.data(), mine.size()))
          << "rank " << r << " chose differently from rank 0";
    }
  }

  std::string cache_path() const { return shm_probe_cache_path(shm_probe_cache_key(size_, options_.chunk_bytes)); }

  int rank_ = 0;
  int size_ = 1;
  MpiTypes types_;
  std::string folder_;
  ShmAllreduceOptions options_;
  ShmAllreduceSelection selection_;
  std::unique_ptr<ShmBackend> backend_;
};

// Only the last rank measures MPI 1000x slower: the slowest rank's times
// decide, so every rank takes shared memory from the smallest probed size's
// half (4 KiB's: 2 KiB) on, though rank 0's own clock may say otherwise.
TEST_F(ShmProbeTest, RanksThatMeasureDifferentlyAgreeOnTheSlowestRanksTimes) {
  const ShmProbeChoice choice = probe(ShmProbeMode::kFresh, size_ - 1, "mpi=1000");
  expect_same_on_every_rank(choice);
  ASSERT_EQ(choice.ranges.size(), 2u) << choice.describe();
  EXPECT_FALSE(choice.ranges[0].shm);
  EXPECT_TRUE(choice.ranges[1].shm);
  EXPECT_EQ(choice.ranges[1].from_bytes, 2 << 10);
  const ShmAllreduceSelection& applied = backend_->selection();
  EXPECT_FALSE(applied.use_shm(1 << 10, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_TRUE(applied.use_shm(4 << 10, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_TRUE(applied.use_shm(64 << 20, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_EQ(backend_->engine().one_stage_bytes(), choice.one_stage_bytes);
  // And the other way round: the last rank's shared memory 1000x slower.
  const ShmProbeChoice mpi = probe(ShmProbeMode::kFresh, size_ - 1, "shm=1000");
  expect_same_on_every_rank(mpi);
  ASSERT_EQ(mpi.ranges.size(), 1u) << mpi.describe();
  EXPECT_FALSE(mpi.ranges[0].shm);
  EXPECT_FALSE(backend_->selection().use_shm(64 << 20, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_EQ(backend_->engine().streaming_stores(), mpi.streaming_stores);
}

// A cached choice is taken as it is (the skew that would say MPI does not
// matter: nothing is measured); a corrupt cache is measured again and
// rewritten; "fresh" ignores a valid cache.
TEST_F(ShmProbeTest, CacheIsUsedAndACorruptOneRewritten) {
  const ShmProbeChoice first = probe(ShmProbeMode::kCached, size_ - 1, "mpi=1000");
  ASSERT_TRUE(first.ranges.size() == 2 && first.ranges[1].shm) << first.describe();
  const ShmProbeChoice again = probe(ShmProbeMode::kCached, size_ - 1, "shm=1000");
  EXPECT_EQ(again.serialize(), first.serialize());
  expect_same_on_every_rank(again);
  const ShmProbeChoice fresh = probe(ShmProbeMode::kFresh, size_ - 1, "shm=1000");
  EXPECT_EQ(fresh.ranges.size(), 1u) << fresh.describe();

  if (rank_ == 0) std::ofstream(cache_path(), std::ios::trunc) << "CHORUS-SHM-PROBE 1\ngarbage";
  MPI_Barrier(MPI_COMM_WORLD);
  const ShmProbeChoice remeasured = probe(ShmProbeMode::kCached, size_ - 1, "mpi=1000");
  expect_same_on_every_rank(remeasured);
  ASSERT_EQ(remeasured.ranges.size(), 2u) << remeasured.describe();
  if (rank_ == 0) {
    ShmProbeChoice reread;
    std::string warning;
    EXPECT_TRUE(load_shm_probe(cache_path(), shm_probe_cache_key(size_, options_.chunk_bytes), &reread, &warning))
        << warning;
    EXPECT_EQ(reread.serialize(), remeasured.serialize());
  }
}

// A bad skew on one rank fails every rank, naming the value where it is.
TEST_F(ShmProbeTest, BadSkewFailsEveryRank) {
  if (rank_ == size_ - 1) setenv("CHORUS_TEST_SHM_PROBE_SKEW", "mpi=0", 1);
  Config config;
  config.shm_probe = ShmProbeMode::kFresh;
  const Status status = probe_and_choose(config, MPI_COMM_WORLD, rank_, size_, options_.chunk_bytes, selection_,
                                         backend_.get());
  ASSERT_FALSE(status.ok());
  if (rank_ == size_ - 1) {
    EXPECT_EQ(status.message(), "CHORUS_TEST_SHM_PROBE_SKEW='mpi=0' is invalid: expected mpi=F and/or shm=F, "
                                "comma-separated, F a factor in (0, 1e6]");
  } else {
    EXPECT_EQ(status.message(), "CHORUS_TEST_SHM_PROBE_SKEW is invalid on another rank; its error says why");
  }
}

// Both store modes give the MPI backend's bits (float32 sums fold in rank
// order on both paths), over many chunks so slots are rewritten.
TEST_F(ShmProbeTest, PlainAndStreamingStoresGiveTheMpiBackendsBits) {
  const int64_t count = (options_.chunk_bytes / 4) * 7 + 13;
  std::vector<float> input(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    input[static_cast<size_t>(i)] = 1.0f / static_cast<float>(1 + (i * 7919 + rank_ * 104729) % 1000003);
  }
  std::vector<float> expected(input.size());
  ASSERT_TRUE(backend_->mpi().allreduce(input.data(), expected.data(), count, DataType::kFloat32, ReduceOp::kSum, 1.0)
                  ->wait()
                  .ok());
  for (bool streaming : {false, true, false}) {
    backend_->engine().set_streaming_stores(streaming);
    std::vector<float> output(input.size(), -1.0f);
    ASSERT_TRUE(backend_->engine().allreduce(input.data(), output.data(), count, DataType::kFloat32, ReduceOp::kSum).ok());
    EXPECT_EQ(std::memcmp(output.data(), expected.data(), output.size() * sizeof(float)), 0)
        << (streaming ? "streaming" : "plain") << " stores";
  }
}

}  // namespace
}  // namespace chorus
