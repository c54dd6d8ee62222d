// The autotuner's runtime logic without MPI: two Autotuners (rank 0 and
// rank 1) exchange words the way the negotiation does (OR of both), a
// simulated training loop runs steps of known duration under whatever
// setting is in effect, and the tests check that
//  - both ranks apply every setting at the same cycle,
//  - every sample's score is exactly the bytes of a step over the step time
//    of its own setting (whole steps only: no warm-up step and no step in
//    which the setting changed leaks into a window),
//  - the CSV holds one row per sample and the frozen setting,
//  - the kept setting is the best of the simulated cost model,
//  - explicitly set values never change,
//  - a knob beyond the standard three is searched, agreed on and logged
//    like them.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/standard_knobs.h"

namespace chorus {
namespace {

using Clock = Autotuner::Clock;

Response allreduce(const std::string& name, int64_t elements) {
  Response r;
  r.type = Response::Type::kAllreduce;
  r.name = name;
  r.dtype = DataType::kFloat32;
  r.elements = elements;
  return r;
}

// A step is two cycles: two gradients, then a third (a backward pass that
// the cycle trigger split), 24 MiB in all.
const std::vector<std::vector<Response>> kStep = {
    {allreduce("grad.a", 1 << 20), allreduce("grad.b", 3 << 20)}, {allreduce("grad.c", 2 << 20)}};
constexpr double kStepBytes = 6.0 * (1 << 20) * 4;

// The host backend's algorithms on one host, and on several hosts (MPI only).
const std::vector<std::string> kOneHost = {"shm", "mpi"};
const std::vector<std::string> kMpiOnly = {"mpi"};
constexpr int kShm = 0;  // index into kOneHost

// The runtime's knobs in its order (runtime.cc), and their indices.
std::vector<TuningKnob> standard_knobs(const Config& config, const std::vector<std::string>& algorithms) {
  return {fusion_threshold_knob(config), cycle_time_knob(config), algorithm_knob(config, algorithms)};
}
constexpr size_t kThreshold = 0, kCycleTime = 1, kAlgorithm = 2;

// Seconds per step under `s` (on one host): best at 8 MiB, 2 ms, shared memory.
double step_seconds(const TuningSettings& s) {
  const double log2_mib = std::log2(s[kThreshold] / (1 << 20));
  return 0.1 * (1.0 + 0.05 * (log2_mib - 3) * (log2_mib - 3) + 0.02 * (s[kCycleTime] - 2) * (s[kCycleTime] - 2) +
                (s[kAlgorithm] == kShm ? 0.0 : 0.3));
}
using CostModel = std::function<double(const TuningSettings&)>;

struct Applied {
  uint64_t cycle;
  TuningSettings settings;
};

struct SimulatedRun {
  std::vector<Applied> applied;  // rank 0's; rank 1's were checked equal
  TuningSettings final_settings;
  bool frozen = false;
  uint64_t cycles = 0;
};

// Runs `steps` simulated steps; the first `slow_steps` take 10x longer
// (start-up effects the warm-up must hide).
// In every `spike_every`-th step (if > 0) the first cycle takes 9x longer:
// another process took the core.
// `cost`: seconds per step under a setting.
SimulatedRun simulate(const Config& config, const std::vector<TuningKnob>& knobs, int steps, int slow_steps = 0,
                      double time_scale = 1.0, int spike_every = 0, const CostModel& cost = step_seconds) {
  std::unique_ptr<Autotuner> rank0, rank1;
  EXPECT_TRUE(Autotuner::create(config, knobs, 0, &rank0).ok());
  EXPECT_TRUE(Autotuner::create(config, knobs, 1, &rank1).ok());
  SimulatedRun run;
  if (!rank0 || !rank1) return run;
  std::vector<double> initial;
  for (const TuningKnob& knob : knobs) initial.push_back(knob.initial);
  TuningSettings current(initial);
  Clock::time_point now = Clock::time_point{} + std::chrono::hours(1);
  uint64_t cycle = 0;
  for (int step = 0; step < steps; ++step) {
    for (size_t part = 0; part < kStep.size(); ++part) {
      const auto& responses = kStep[part];
      ++cycle;
      // The negotiation: OR of every rank's words.
      std::vector<uint64_t> words = rank0->words();
      const std::vector<uint64_t> other = rank1->words();
      EXPECT_EQ(other, std::vector<uint64_t>(TuningMessage::words(knobs.size()), 0));
      for (size_t i = 0; i < words.size(); ++i) words[i] |= other[i];
      const auto s0 = rank0->receive(words, cycle);
      const auto s1 = rank1->receive(words, cycle);
      EXPECT_EQ(s0.has_value(), s1.has_value()) << "cycle " << cycle;
      if (s0 && s1) {
        EXPECT_EQ(*s0, *s1) << "cycle " << cycle;
        current = *s0;
        run.applied.push_back({cycle, *s0});
      }
      const double spike = spike_every > 0 && step % spike_every == spike_every - 1 && part == 0 ? 9.0 : 1.0;
      const double seconds =
          time_scale * spike * cost(current) * (step < slow_steps ? 10.0 : 1.0) / kStep.size();
      now += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
      rank0->observe(responses, now);
      rank1->observe(responses, now);  // does nothing off rank 0
    }
  }
  EXPECT_EQ(rank0->frozen(), rank1->frozen());
  run.final_settings = current;
  run.frozen = rank0->frozen();
  run.cycles = cycle;
  return run;
}

struct Row {
  size_t sample;
  std::string kind;
  TuningSettings settings;
  double score;
  bool best;
};

const char* const kStandardHeader = "sample,kind,fusion_threshold_bytes,cycle_time_ms,algorithm,bytes_per_second,best";

// The rows of a log whose first line is `header`; the algorithm column's
// labels become their index in kOneHost.
std::vector<Row> read_csv(const std::string& path, const std::string& header = kStandardHeader) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, header);
  std::vector<std::string> columns;
  std::stringstream names(line);
  for (std::string name; std::getline(names, name, ',');) columns.push_back(name);
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::vector<std::string> f(columns.size());
    for (auto& field : f) std::getline(fields, field, ',');
    std::vector<double> values;  // the knobs' columns, between kind and bytes_per_second
    for (size_t c = 2; c + 2 < columns.size(); ++c) {
      values.push_back(columns[c] == "algorithm" ? (f[c] == "shm" ? kShm : 1) : std::stod(f[c]));
    }
    rows.push_back({std::stoul(f[0]), f[1], TuningSettings(values), std::stod(f[f.size() - 2]), f.back() == "1"});
  }
  return rows;
}

class AutotunerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/chorus_autotuner_test_XXXXXX";
    const int fd = mkstemp(name);
    ASSERT_GE(fd, 0);
    ::close(fd);
    path_ = name;
  }
  void TearDown() override { unlink(path_.c_str()); }

  Config config(const std::map<std::string, std::string>& extra = {}) {
    std::map<std::string, std::string> env = {{"CHORUS_AUTOTUNE", "1"},
                                              {"CHORUS_AUTOTUNE_LOG", path_},
                                              {"CHORUS_AUTOTUNE_WARMUP_STEPS", "3"},
                                              {"CHORUS_AUTOTUNE_STEPS_PER_SAMPLE", "4"},
                                              {"CHORUS_AUTOTUNE_SAMPLES", "16"}};
    for (const auto& [k, v] : extra) env[k] = v;
    Config c;
    const Status s = Config::from_env(&c, [&](const char* n) -> const char* {
      const auto it = env.find(n);
      return it == env.end() ? nullptr : it->second.c_str();
    });
    EXPECT_TRUE(s.ok()) << s.message();
    return c;
  }
  std::string path_;
};

TEST_F(AutotunerTest, RanksAgreeScoresAreExactAndTheBestIsKept) {
  const SimulatedRun run = simulate(config(), standard_knobs(config(), kOneHost), 200, /*slow_steps=*/3);
  ASSERT_TRUE(run.frozen);
  const std::vector<Row> rows = read_csv(path_);
  ASSERT_EQ(rows.size(), 17u);  // 16 samples and the frozen setting

  // Generation g applies sample g-1's setting; the last generation the frozen one.
  ASSERT_EQ(run.applied.size(), 17u);
  EXPECT_EQ(run.applied.front().cycle, 1u);  // published at init(), applied in the first cycle
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].sample, i);
    EXPECT_EQ(run.applied[i].settings, rows[i].settings) << "sample " << i;
  }
  EXPECT_EQ(rows[0].kind, "start");
  EXPECT_EQ(rows[0].settings, (TuningSettings{64 << 20, 0.0, kShm}));
  EXPECT_EQ(rows.back().kind, "frozen");
  EXPECT_TRUE(rows.back().best);
  EXPECT_EQ(run.final_settings, rows.back().settings);

  // Whole steps under one setting: the score is that setting's exact rate,
  // though the first three steps ran 10x slower and every change of setting
  // landed in the middle of a step.
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    const double expected = kStepBytes / step_seconds(rows[i].settings);
    EXPECT_NEAR(rows[i].score / expected, 1.0, 1e-6) << "sample " << i << " (" << rows[i].kind << ")";
  }
  // The search found the best of the cost model within its budget: 8 MiB
  // and shared memory, the cycle time within one step of 2 ms.
  EXPECT_EQ(rows.back().settings[kThreshold], 8 << 20);
  EXPECT_EQ(rows.back().settings[kAlgorithm], kShm);
  EXPECT_NEAR(rows.back().settings[kCycleTime], 2.0, 0.5);
  EXPECT_GE(kStepBytes / step_seconds(rows.back().settings), 0.99 * kStepBytes / 0.1);

  // Steps used: 3 warm-up, then per sample one partial step plus 4 whole
  // ones. Nothing changes after the freeze.
  const uint64_t frozen_at = run.applied.back().cycle;
  EXPECT_LE(frozen_at, 2u * (3 + 16 * 5 + 1) + 1);
}

TEST_F(AutotunerTest, SlowStepsCount) {
  // One step in 7 has a first cycle 9x longer (a setting can cause such
  // steps: waits, wake-ups): the score is the bytes over all of the
  // window's time, so it includes them.
  const SimulatedRun run = simulate(config(), standard_knobs(config(), kOneHost), 300, 0, 1.0, 7);
  ASSERT_TRUE(run.frozen);
  const std::vector<Row> rows = read_csv(path_);
  ASSERT_EQ(rows.size(), 17u);
  int slower = 0;
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    const double steady = kStepBytes / step_seconds(rows[i].settings);
    EXPECT_LE(rows[i].score, steady * (1.0 + 1e-6)) << "sample " << i;
    // A window of 4 steps holds at most one slow one: 4 + 4 = 8 half-steps extra at most.
    EXPECT_GE(rows[i].score, steady * 4.0 / 8.0 * (1.0 - 1e-6)) << "sample " << i;
    slower += rows[i].score < steady * 0.99;
  }
  EXPECT_GT(slower, 0);
}

TEST_F(AutotunerTest, ExplicitSettingsNeverChange) {
  const Config fixed = config({{"CHORUS_FUSION_THRESHOLD", "4194304"}, {"CHORUS_SHM_ALLREDUCE", "auto"}});
  const SimulatedRun run = simulate(fixed, standard_knobs(fixed, kOneHost), 200);
  ASSERT_TRUE(run.frozen);
  std::set<double> cycle_times;
  for (const Applied& a : run.applied) {
    EXPECT_EQ(a.settings[kThreshold], 4194304);
    EXPECT_EQ(a.settings[kAlgorithm], kShm);
    cycle_times.insert(a.settings[kCycleTime]);
  }
  EXPECT_GT(cycle_times.size(), 3u);  // the free dimension was searched
  for (const Row& row : read_csv(path_)) {
    EXPECT_EQ(row.settings[kThreshold], 4194304);
    EXPECT_EQ(row.settings[kAlgorithm], kShm);
  }
  EXPECT_NEAR(run.final_settings[kCycleTime], 2.0, 0.5);
}

TEST_F(AutotunerTest, WithoutSharedMemoryTheAlgorithmStaysMpi) {
  const SimulatedRun run = simulate(config(), standard_knobs(config(), kMpiOnly), 200);
  ASSERT_TRUE(run.frozen);
  for (const Applied& a : run.applied) EXPECT_EQ(a.settings[kAlgorithm], 0);  // "mpi", the only one
  EXPECT_EQ(run.final_settings[kThreshold], 8 << 20);
}

TEST_F(AutotunerTest, TinyStepsAreMeasuredForTheMinimumDuration) {
  // Steps of 1-4 ms: each sample needs >= 50 ms, i.e. a dozen steps or
  // more, not 4.
  const Config slow = config({{"CHORUS_AUTOTUNE_MIN_SAMPLE_MS", "50"}});
  const SimulatedRun run = simulate(slow, standard_knobs(slow, kOneHost), 5000, 0, 0.01);
  ASSERT_TRUE(run.frozen);
  const auto rows = read_csv(path_);
  ASSERT_EQ(rows.size(), 17u);
  // Between two applied settings, sample i-1 measured >= 50 ms of whole
  // steps of its own setting (2 cycles each).
  for (size_t i = 1; i < run.applied.size(); ++i) {
    const double step = 0.01 * step_seconds(run.applied[i - 1].settings);
    const auto steps = static_cast<uint64_t>(std::floor(0.05 / step));
    EXPECT_GE(run.applied[i].cycle - run.applied[i - 1].cycle, 2 * steps) << "sample " << i - 1;
  }
  // The clock counts nanoseconds: over ~50 ms that is ~1e-6 relative.
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    EXPECT_NEAR(rows[i].score / (kStepBytes / (0.01 * step_seconds(rows[i].settings))), 1.0, 1e-5) << "sample " << i;
  }
}

TEST_F(AutotunerTest, NoRepeatedNamesMeansNoStepsAndNoChange) {
  std::unique_ptr<Autotuner> tuner;
  ASSERT_TRUE(Autotuner::create(config(), standard_knobs(config(), kOneHost), 0, &tuner).ok());
  Clock::time_point now{};
  for (uint64_t cycle = 1; cycle <= 100; ++cycle) {
    const auto applied = tuner->receive(tuner->words(), cycle);
    EXPECT_EQ(applied.has_value(), cycle == 1);
    now += std::chrono::milliseconds(1);
    tuner->observe({allreduce("once." + std::to_string(cycle), 10)}, now);
  }
  EXPECT_FALSE(tuner->frozen());
  EXPECT_EQ(read_csv(path_).size(), 0u);
}

TEST_F(AutotunerTest, ASingleSampleFreezesTheStart) {
  const Config one = config({{"CHORUS_AUTOTUNE_SAMPLES", "1"}});
  const SimulatedRun run = simulate(one, standard_knobs(one, kOneHost), 20);
  ASSERT_TRUE(run.frozen);
  const auto rows = read_csv(path_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].kind, "frozen");
  EXPECT_EQ(rows[1].settings, (TuningSettings{64 << 20, 0.0, kShm}));
}

TEST_F(AutotunerTest, AFourthKnobIsSearchedAgreedOnAndLogged) {
  // A knob a later change could add, best at 5 and off its best at init().
  const Config c = config();
  std::vector<TuningKnob> knobs = standard_knobs(c, kOneHost);
  knobs.push_back(TuningKnob::numeric("pipeline_depth", "pipeline depth", "", TuningKnob::Scale::kLinear,
                                      {1, 2, 3, 4, 5, 6, 7, 8}, 2, true));
  constexpr size_t kDepth = 3;
  const CostModel cost = [](const TuningSettings& s) {
    return step_seconds(s) + 0.1 * 0.03 * (s[kDepth] - 5) * (s[kDepth] - 5);
  };
  const SimulatedRun run = simulate(c, knobs, 200, 0, 1.0, 0, cost);  // ranks agree at every cycle
  ASSERT_TRUE(run.frozen);
  const std::vector<Row> rows = read_csv(
      path_, "sample,kind,fusion_threshold_bytes,cycle_time_ms,algorithm,pipeline_depth,bytes_per_second,best");
  ASSERT_EQ(rows.size(), 17u);
  ASSERT_EQ(run.applied.size(), rows.size());
  std::set<double> depths;
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].settings.size(), 4u);
    EXPECT_EQ(run.applied[i].settings, rows[i].settings) << "sample " << i;
    depths.insert(rows[i].settings[kDepth]);
  }
  EXPECT_EQ(rows[0].settings, (TuningSettings{64 << 20, 0.0, kShm, 2}));
  for (size_t i = 0; i + 1 < rows.size(); ++i) {
    EXPECT_NEAR(rows[i].score / (kStepBytes / cost(rows[i].settings)), 1.0, 1e-6) << "sample " << i;
  }
  EXPECT_GE(depths.size(), 3u);  // searched, not left at its start
  EXPECT_EQ(run.final_settings[kDepth], 5);
  EXPECT_EQ(run.final_settings, rows.back().settings);
  EXPECT_GT(kStepBytes / cost(run.final_settings), kStepBytes / cost(rows[0].settings));
}

TEST_F(AutotunerTest, UnwritableLogFailsCreationOnRankZeroOnly) {
  std::unique_ptr<Autotuner> tuner;
  const Config bad = config({{"CHORUS_AUTOTUNE_LOG", "/nonexistent-dir/x.csv"}});
  EXPECT_EQ(Autotuner::create(bad, standard_knobs(bad, kOneHost), 0, &tuner).message(),
            "CHORUS_AUTOTUNE_LOG: cannot open '/nonexistent-dir/x.csv' for writing: No such file or directory");
  EXPECT_TRUE(Autotuner::create(bad, standard_knobs(bad, kOneHost), 1, &tuner).ok());
}

}  // namespace
}  // namespace chorus
