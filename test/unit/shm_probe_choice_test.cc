// The start-up probe's pure parts: the rule that turns timings into a store
// mode and size ranges (ops/shm/shm_probe_choice.h), the cache file
// (shm_probe_cache.h: round trip, corrupt, truncated, foreign, malformed),
// and CHORUS_SHM_PROBE's parsing and its interplay with the threshold.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "base/config.h"
#include "ops/shm/shm_probe_cache.h"
#include "ops/shm/shm_probe_choice.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;

constexpr int64_t KiB = 1024;
constexpr int64_t MiB = 1024 * 1024;

// mpi, plain, streaming
std::vector<ShmProbeSample> samples_where(std::vector<std::array<double, 3>> times) {
  const int64_t sizes[] = {64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB};
  std::vector<ShmProbeSample> out;
  for (size_t i = 0; i < times.size(); ++i) out.push_back({sizes[i], times[i][0], times[i][1], times[i][2]});
  return out;
}

TEST(ShmProbeChoice, StoreModeFromTheSizesThatRewriteSlots) {
  // Streaming loses below 1 MiB (idle slots) but wins above: streaming.
  auto choice = choose_allreduce_paths(samples_where({{10, 5, 50}, {40, 20, 80}, {200, 150, 100}, {800, 700, 500},
                                                      {3000, 2900, 2000}}));
  EXPECT_TRUE(choice.streaming_stores);
  // Streaming wins below 1 MiB only (noise there): plain.
  choice = choose_allreduce_paths(samples_where({{10, 9, 1}, {40, 30, 1}, {200, 150, 160}, {800, 700, 900},
                                                 {3000, 2000, 2900}}));
  EXPECT_FALSE(choice.streaming_stores);
  // Streaming 4% faster: within the margin, plain.
  choice = choose_allreduce_paths(samples_where({{10, 9, 9}, {40, 30, 30}, {200, 150, 144}, {800, 700, 672},
                                                 {3000, 2000, 1920}}));
  EXPECT_FALSE(choice.streaming_stores);
}

TEST(ShmProbeChoice, RangesAtGeometricMidpointsWithTheChosenStoreMode) {
  // Plain stores chosen; shm (plain) wins at 64 KiB, loses at 256 KiB and
  // 1 MiB, wins from 4 MiB: mpi below 32 KiB, shm from 32 KiB, mpi from
  // 128 KiB (sqrt(64K*256K)), shm from 2 MiB (sqrt(1M*4M)).
  const auto choice = choose_allreduce_paths(samples_where({{10, 9, 8}, {40, 50, 30}, {200, 210, 190},
                                                            {800, 700, 900}, {3000, 2000, 2900}}));
  ASSERT_FALSE(choice.streaming_stores);
  ASSERT_EQ(choice.ranges.size(), 4u);
  EXPECT_EQ(choice.ranges[0].from_bytes, 0);
  EXPECT_FALSE(choice.ranges[0].shm);
  EXPECT_EQ(choice.ranges[1].from_bytes, 32 * KiB);
  EXPECT_TRUE(choice.ranges[1].shm);
  EXPECT_EQ(choice.ranges[2].from_bytes, 128 * KiB);
  EXPECT_FALSE(choice.ranges[2].shm);
  EXPECT_EQ(choice.ranges[3].from_bytes, 2 * MiB);
  EXPECT_TRUE(choice.ranges[3].shm);
  EXPECT_EQ(choice.describe(), "plain stores; one stage never; mpi from 0 B, shm from 32 KiB, mpi from 128 KiB, shm from 2 MiB "
                               "(MPI time / shm time: 64 KiB 1.11x 256 KiB 0.80x 1 MiB 0.95x 4 MiB 1.14x 16 MiB 1.50x)");

  ShmAllreduceSelection selection{AutoOnOff::kAuto, 0, 2, {}};
  selection.measured = choice.ranges;
  EXPECT_FALSE(selection.use_shm(4 * KiB, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_TRUE(selection.use_shm(100 * KiB, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_FALSE(selection.use_shm(1 * MiB, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_TRUE(selection.use_shm(256 * MiB, DataType::kFloat32, ReduceOp::kSum));
  selection.mode = AutoOnOff::kOff;  // forced modes win over measurement
  EXPECT_FALSE(selection.use_shm(256 * MiB, DataType::kFloat32, ReduceOp::kSum));
  selection.mode = AutoOnOff::kOn;
  EXPECT_TRUE(selection.use_shm(1 * MiB, DataType::kFloat32, ReduceOp::kSum));
}

// 4, 16 and 64 KiB timed through the one-stage path too (mpi, plain,
// streaming, one stage).
std::vector<ShmProbeSample> small_samples_where(std::vector<std::array<double, 4>> times) {
  const int64_t sizes[] = {4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB};
  std::vector<ShmProbeSample> out;
  for (size_t i = 0; i < times.size(); ++i) {
    out.push_back({sizes[i], times[i][0], times[i][1], times[i][2], sizes[i] <= 64 * KiB ? times[i][3] : 0.0});
  }
  return out;
}

TEST(ShmProbeChoice, OneStageFromTheSmallestSizeWhileItWinsByTheMargin) {
  // One stage wins at 4 KiB only: up to sqrt(4K*16K) = 8 KiB.
  auto choice = choose_allreduce_paths(small_samples_where({{4, 3, 3, 2}, {8, 4, 4, 5}, {20, 8, 8, 12}, {50, 30, 30, 0}}));
  EXPECT_EQ(choice.one_stage_bytes, 8 * KiB);
  // At every size timed both ways: up to the largest (64 KiB).
  choice = choose_allreduce_paths(small_samples_where({{4, 3, 3, 2}, {8, 4, 4, 3}, {20, 8, 8, 7}, {50, 30, 30, 0}}));
  EXPECT_EQ(choice.one_stage_bytes, 64 * KiB);
  // 6% faster at 64 KiB: within the margin, up to sqrt(16K*64K) = 32 KiB.
  choice = choose_allreduce_paths(small_samples_where({{4, 3, 3, 2}, {8, 4, 4, 3}, {20, 8, 8, 7.5}, {50, 30, 30, 0}}));
  EXPECT_EQ(choice.one_stage_bytes, 32 * KiB);
  // Losing at 4 KiB: never, though it wins at 16 KiB (noise, or a size range
  // that would leave a hole).
  choice = choose_allreduce_paths(small_samples_where({{4, 3, 3, 4}, {8, 4, 4, 3}, {20, 8, 8, 12}, {50, 30, 30, 0}}));
  EXPECT_EQ(choice.one_stage_bytes, 0);
  EXPECT_EQ(choice.describe().rfind("plain stores; one stage never; ", 0), 0u) << choice.describe();
}

TEST(ShmProbeChoice, SizesUpToTheOneStageLimitAreJudgedByTheirOneStageTime) {
  // Chunked shared memory loses to MPI at 4 and 16 KiB, one stage beats it
  // at 4 KiB only: shm from 2 KiB, mpi from 8 KiB, shm from 32 KiB.
  const auto choice =
      choose_allreduce_paths(small_samples_where({{3, 4, 4, 2}, {5, 6, 6, 7}, {20, 8, 8, 12}, {50, 30, 30, 0}}));
  ASSERT_EQ(choice.one_stage_bytes, 8 * KiB);
  ASSERT_EQ(choice.ranges.size(), 4u) << choice.describe();
  EXPECT_EQ(choice.ranges[1].from_bytes, 2 * KiB);
  EXPECT_TRUE(choice.ranges[1].shm);
  EXPECT_EQ(choice.ranges[2].from_bytes, 8 * KiB);
  EXPECT_FALSE(choice.ranges[2].shm);
  EXPECT_EQ(choice.ranges[3].from_bytes, 32 * KiB);
  EXPECT_TRUE(choice.ranges[3].shm);
  EXPECT_EQ(choice.describe(), "plain stores; one stage up to 8 KiB; mpi from 0 B, shm from 2 KiB, mpi from 8 KiB, "
                               "shm from 32 KiB (MPI time / shm time: 4 KiB 1.50x 16 KiB 0.83x 64 KiB 2.50x "
                               "256 KiB 1.67x)");
}

TEST(ShmProbeChoice, SerializeRoundTripAndMalformedText) {
  const auto choice = choose_allreduce_paths(samples_where({{10.25, 9, 8}, {40, 50, 30.5}}));
  ShmProbeChoice back;
  ASSERT_TRUE(ShmProbeChoice::parse(choice.serialize(), &back));
  EXPECT_EQ(back.serialize(), choice.serialize());
  EXPECT_EQ(back.describe(), choice.describe());
  const auto small = choose_allreduce_paths(small_samples_where({{4, 3, 3, 2}, {8, 4, 4, 5}, {20, 8, 8, 12}}));
  ASSERT_TRUE(ShmProbeChoice::parse(small.serialize(), &back));
  EXPECT_EQ(back.one_stage_bytes, 8 * KiB);
  EXPECT_EQ(back.serialize(), small.serialize());
  for (const char* bad : {"", "sample 1 2 3 4", "sample 1024 1 1 1\n", "sample 1024 1 1 0 0\n",
                          "sample 1024 1 1 1 -1\n", "sample 2048 1 1 1 0\nsample 1024 1 1 1 0\n",
                          "sample 1024 nan 1 1 0\n", "sample 1024 1 1 1 inf\n", "other 1024 1 1 1 0\n"}) {
    EXPECT_FALSE(ShmProbeChoice::parse(bad, &back)) << bad;
  }
}

class ShmProbeCache : public ::testing::Test {
 protected:
  void SetUp() override {
    char folder[] = "/tmp/chorus-probe-cache-XXXXXX";
    ASSERT_NE(mkdtemp(folder), nullptr);
    folder_ = folder;
    setenv("XDG_CACHE_HOME", folder_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("XDG_CACHE_HOME");
    (void)std::system(("rm -rf '" + folder_ + "'").c_str());
  }
  std::string folder_;
};

TEST_F(ShmProbeCache, KeyNamesMachineAndSettingsAndPathFollowsXdg) {
  const std::string key = shm_probe_cache_key(4, 256 * KiB);
  EXPECT_THAT(key, HasSubstr(";ranks=4;chunk=262144;probe=3"));
  EXPECT_THAT(key, HasSubstr(";cpus=" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN))));
  EXPECT_NE(shm_probe_cache_key(2, 256 * KiB), key);
  EXPECT_EQ(shm_probe_cache_path(key).rfind(folder_ + "/chorus/shm-probe-", 0), 0u) << shm_probe_cache_path(key);
  EXPECT_NE(shm_probe_cache_path(shm_probe_cache_key(2, 256 * KiB)), shm_probe_cache_path(key));
}

TEST_F(ShmProbeCache, RoundTripThenCorruptTruncatedForeignAndMalformedAreRefusedWithAWarning) {
  const std::string key = shm_probe_cache_key(2, 256 * KiB);
  const std::string path = shm_probe_cache_path(key);
  ShmProbeChoice loaded;
  std::string warning;
  EXPECT_FALSE(load_shm_probe(path, key, &loaded, &warning));
  EXPECT_EQ(warning, "");  // no file: nothing to warn about

  const auto choice = choose_allreduce_paths(samples_where({{10, 9, 8}, {40, 50, 30}, {200, 150, 160}}));
  ASSERT_TRUE(store_shm_probe(path, key, choice).ok());
  ASSERT_TRUE(load_shm_probe(path, key, &loaded, &warning)) << warning;
  EXPECT_EQ(loaded.serialize(), choice.serialize());

  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& text) { std::ofstream(path, std::ios::binary | std::ios::trunc) << text; };
  std::string flipped = bytes;
  flipped.back() = flipped.back() == '1' ? '2' : '1';
  write(flipped);
  EXPECT_FALSE(load_shm_probe(path, key, &loaded, &warning));
  EXPECT_THAT(warning, HasSubstr("'" + path + "' is corrupt"));
  write(bytes.substr(0, bytes.size() - 5));
  EXPECT_FALSE(load_shm_probe(path, key, &loaded, &warning));
  EXPECT_THAT(warning, HasSubstr("is truncated"));
  write("not a cache at all");
  EXPECT_FALSE(load_shm_probe(path, key, &loaded, &warning));
  EXPECT_THAT(warning, HasSubstr("is not a Chorus shared-memory probe cache"));

  // A valid file measured for other settings (copied, or a hash collision).
  const std::string other = shm_probe_cache_key(3, 256 * KiB);
  ASSERT_TRUE(store_shm_probe(path, other, choice).ok());
  EXPECT_FALSE(load_shm_probe(path, key, &loaded, &warning));
  EXPECT_EQ(warning, "Shared-memory probe cache '" + path + "' is foreign: it was measured for '" + other +
                         "', expected '" + key + "'");
  // Rewritten, it is read again.
  ASSERT_TRUE(store_shm_probe(path, key, choice).ok());
  EXPECT_TRUE(load_shm_probe(path, key, &loaded, &warning)) << warning;
}

// chorusrun --check-build's listing: a valid file by its key and choice,
// a corrupt one by its path and why it is not used.
TEST_F(ShmProbeCache, DescribeListsValidAndUnusableFiles) {
  EXPECT_TRUE(describe_shm_probe_cache().empty());
  const std::string key = shm_probe_cache_key(2, 256 * KiB);
  const auto choice = choose_allreduce_paths(samples_where({{10, 9, 8}, {40, 50, 30}}));
  ASSERT_TRUE(store_shm_probe(shm_probe_cache_path(key), key, choice).ok());
  const std::string bad = folder_ + "/chorus/shm-probe-0000000000000000";
  std::ofstream(bad) << "junk";
  const std::vector<std::string> lines = describe_shm_probe_cache();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "Shared-memory probe cache '" + bad +
                          "' is not a Chorus shared-memory probe cache (expected it to start with 'CHORUS-SHM-PROBE "
                          "1'); measured again by the next job");
  EXPECT_EQ(lines[1], key + ": " + choice.describe());
}

Status parse(std::map<std::string, std::string> values, Config* config) {
  return Config::from_env(config, [&values](const char* name) -> const char* {
    const auto found = values.find(name);
    return found == values.end() ? nullptr : found->second.c_str();
  });
}

TEST(ShmProbeConfig, ModesAndTheThresholdsPrecedence) {
  Config config;
  ASSERT_TRUE(parse({}, &config).ok());
  EXPECT_EQ(config.effective_shm_probe(), ShmProbeMode::kCached);
  ASSERT_TRUE(parse({{"CHORUS_SHM_PROBE", "fresh"}}, &config).ok());
  EXPECT_EQ(config.effective_shm_probe(), ShmProbeMode::kFresh);
  // A threshold alone: the user chose the sizes, nothing is measured.
  ASSERT_TRUE(parse({{"CHORUS_SHM_ALLREDUCE_THRESHOLD", "0"}}, &config).ok());
  EXPECT_EQ(config.effective_shm_probe(), ShmProbeMode::kOff);
  ASSERT_TRUE(parse({{"CHORUS_SHM_ALLREDUCE_THRESHOLD", "0"}, {"CHORUS_SHM_PROBE", "cached"}}, &config).ok());
  EXPECT_EQ(config.effective_shm_probe(), ShmProbeMode::kCached);
  for (const char* bad : {"on", "OFF", "", "cached "}) {
    const Status s = parse({{"CHORUS_SHM_PROBE", bad}}, &config);
    EXPECT_EQ(s.message(), std::string("CHORUS_SHM_PROBE='") + bad + "' is invalid: expected one of cached, fresh, off");
  }
}

}  // namespace
}  // namespace chorus
