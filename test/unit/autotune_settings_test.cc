// The autotuner's settings: the CHORUS_AUTOTUNE* variables and which
// variables count as explicitly set (config.h), the standard knobs' grids and
// which of them are fixed (standard_knobs.h, TuningSpace), a knob of any
// other kind alongside them, the message every rank decodes (TuningMessage)
// and the CSV log (AutotuneLog).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

#include "autotune/autotune_log.h"
#include "autotune/autotune_space.h"
#include "autotune/standard_knobs.h"
#include "base/config.h"

namespace chorus {
namespace {

Config config_from(const std::map<std::string, std::string>& env) {
  Config config;
  const Status status = Config::from_env(&config, [&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  EXPECT_TRUE(status.ok()) << status.message();
  return config;
}

// The runtime's knobs in its order (runtime.cc), without a way to apply them.
TuningSpace standard_space(const Config& config, const std::vector<std::string>& algorithms) {
  return TuningSpace({fusion_threshold_knob(config), cycle_time_knob(config), algorithm_knob(config, algorithms)});
}
constexpr size_t kThreshold = 0, kCycleTime = 1, kAlgorithm = 2;  // their indices

// A fourth knob of the kind a later change could add: a number on a log
// scale with no unit, off its grid at init().
TuningKnob chunk_knob() {
  return TuningKnob::numeric("chunk_elements", "chunk", "", TuningKnob::Scale::kLog, {1024, 4096, 16384, 65536}, 3000,
                             true);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string temporary_path() {
  char path[] = "/tmp/chorus_autotune_log_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  return path;
}

std::string error_for(const std::string& name, const std::string& value) {
  Config config;
  const Status status = Config::from_env(&config, [&](const char* asked) -> const char* {
    return name == asked ? value.c_str() : nullptr;
  });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << name << "='" << value << "'";
  return status.message();
}

TEST(AutotuneConfig, DefaultsAndValues) {
  const Config defaults = config_from({});
  EXPECT_FALSE(defaults.autotune);
  EXPECT_EQ(defaults.autotune_log_path, "");
  EXPECT_EQ(defaults.autotune_warmup_steps, 5);
  EXPECT_EQ(defaults.autotune_steps_per_sample, 4);
  EXPECT_EQ(defaults.autotune_min_sample_ms, 100.0);
  EXPECT_EQ(defaults.autotune_samples, 20);
  EXPECT_TRUE(defaults.explicitly_set.empty());

  const Config set = config_from({{"CHORUS_AUTOTUNE", "1"},
                                  {"CHORUS_AUTOTUNE_LOG", "/tmp/at.csv"},
                                  {"CHORUS_AUTOTUNE_WARMUP_STEPS", "0"},
                                  {"CHORUS_AUTOTUNE_STEPS_PER_SAMPLE", "100000"},
                                  {"CHORUS_AUTOTUNE_MIN_SAMPLE_MS", "2.5"},
                                  {"CHORUS_AUTOTUNE_SAMPLES", "1000"}});
  EXPECT_TRUE(set.autotune);
  EXPECT_EQ(set.autotune_log_path, "/tmp/at.csv");
  EXPECT_EQ(set.autotune_warmup_steps, 0);
  EXPECT_EQ(set.autotune_steps_per_sample, 100000);
  EXPECT_EQ(set.autotune_min_sample_ms, 2.5);
  EXPECT_EQ(set.autotune_samples, 1000);
  EXPECT_FALSE(config_from({{"CHORUS_AUTOTUNE", "0"}}).autotune);
}

TEST(AutotuneConfig, BadValuesNameTheVariableAndWhatIsAccepted) {
  for (const char* bad : {"", "2", "true", "yes", "01", " 1", "-1"}) {
    EXPECT_EQ(error_for("CHORUS_AUTOTUNE", bad),
              std::string("CHORUS_AUTOTUNE='") + bad + "' is invalid: expected 0 or 1");
  }
  for (const char* bad : {"", "-1", "100001", "2.5", "many"}) {
    EXPECT_EQ(error_for("CHORUS_AUTOTUNE_WARMUP_STEPS", bad),
              std::string("CHORUS_AUTOTUNE_WARMUP_STEPS='") + bad +
                  "' is invalid: expected an integer number of steps in [0, 100000]");
  }
  for (const char* bad : {"0", "100001", "1e2"}) {
    EXPECT_EQ(error_for("CHORUS_AUTOTUNE_STEPS_PER_SAMPLE", bad),
              std::string("CHORUS_AUTOTUNE_STEPS_PER_SAMPLE='") + bad +
                  "' is invalid: expected an integer number of steps in [1, 100000]");
  }
  for (const char* bad : {"-1", "60000.5", "nan", "1s"}) {
    EXPECT_EQ(error_for("CHORUS_AUTOTUNE_MIN_SAMPLE_MS", bad),
              std::string("CHORUS_AUTOTUNE_MIN_SAMPLE_MS='") + bad +
                  "' is invalid: expected a number of milliseconds in [0, 60000]");
  }
  for (const char* bad : {"0", "1001", "-3"}) {
    EXPECT_EQ(error_for("CHORUS_AUTOTUNE_SAMPLES", bad),
              std::string("CHORUS_AUTOTUNE_SAMPLES='") + bad +
                  "' is invalid: expected an integer number of samples in [1, 1000]");
  }
}

TEST(AutotuneConfig, RemembersWhichVariablesWereSet) {
  // A variable set to its default value is still an explicit choice.
  const Config config = config_from({{"CHORUS_CYCLE_TIME_MS", "0"}, {"CHORUS_SHM_ALLREDUCE", "auto"}});
  EXPECT_TRUE(config.was_set("CHORUS_CYCLE_TIME_MS"));
  EXPECT_TRUE(config.was_set("CHORUS_SHM_ALLREDUCE"));
  EXPECT_FALSE(config.was_set("CHORUS_FUSION_THRESHOLD"));
  EXPECT_FALSE(config.was_set("CHORUS_SHM_ALLREDUCE_THRESHOLD"));
  EXPECT_EQ(config.explicitly_set, (std::vector<std::string>{"CHORUS_CYCLE_TIME_MS", "CHORUS_SHM_ALLREDUCE"}));
}

TEST(TuningSpace, GridsWhenNothingIsSet) {
  const TuningSpace space = standard_space(config_from({}), {"shm", "mpi"});
  const auto dims = space.dimensions();
  ASSERT_EQ(dims.size(), 3u);
  ASSERT_EQ(dims[0].coordinates.size(), 15u);  // 1 MiB .. 128 MiB, half octaves
  ASSERT_EQ(dims[1].coordinates.size(), 21u);  // 0 .. 10 ms by 0.5
  ASSERT_EQ(dims[2].coordinates.size(), 2u);   // shm, mpi
  EXPECT_EQ(dims[0].name, "fusion_threshold_bytes");
  EXPECT_EQ(dims[1].name, "cycle_time_ms");
  EXPECT_EQ(dims[2].name, "algorithm");
  EXPECT_TRUE(dims[2].categorical);
  EXPECT_FALSE(dims[0].categorical);
  EXPECT_EQ(dims[2].coordinates, (std::vector<double>{0.0, 1.0}));
  EXPECT_TRUE(space.searches("fusion_threshold_bytes") && space.searches("cycle_time_ms") &&
              space.searches("algorithm"));
  EXPECT_FALSE(space.searches("no_such_knob"));
  EXPECT_EQ(space.settings_at({0, 0, 0})[kThreshold], 1 << 20);
  EXPECT_EQ(space.settings_at({1, 0, 0})[kThreshold], std::llround(std::pow(2.0, 20.5)));
  EXPECT_EQ(space.settings_at({14, 20, 1})[kThreshold], 128 << 20);
  EXPECT_EQ(space.settings_at({14, 20, 1})[kCycleTime], 10.0);
  EXPECT_EQ(space.value(space.settings_at({14, 20, 1}), "algorithm").label, "mpi");
  EXPECT_EQ(space.value(space.settings_at({14, 20, 1}), "cycle_time_ms").number, 10.0);
  EXPECT_NEAR(dims[0].coordinates[2], 1.0 / 7.0, 1e-12);  // log scale: 2 MiB is 1/7 of the way
  EXPECT_NEAR(dims[1].coordinates[1], 1.0 / 20.0, 1e-12);  // linear: 0.5 ms is 1/20 of the way
  // The start is the defaults: 64 MiB, 0 ms, shared memory.
  const TuningSettings start = space.settings_at(space.start());
  EXPECT_EQ(start, (TuningSettings{64 << 20, 0.0, 0}));
  EXPECT_EQ(space.describe(start), "fusion threshold 67108864 bytes, cycle time 0 ms, algorithm shm");
}

TEST(TuningSpace, ExplicitSettingsAreFixed) {
  const TuningSpace space =
      standard_space(config_from({{"CHORUS_FUSION_THRESHOLD", "3000000"}, {"CHORUS_CYCLE_TIME_MS", "2.3"}}),
                     {"shm", "mpi"});
  const auto dims = space.dimensions();
  EXPECT_EQ(dims[0].coordinates, std::vector<double>{0.0});
  EXPECT_EQ(dims[1].coordinates, std::vector<double>{0.0});
  EXPECT_EQ(dims[2].coordinates.size(), 2u);
  EXPECT_FALSE(space.searches("fusion_threshold_bytes"));
  EXPECT_FALSE(space.searches("cycle_time_ms"));
  EXPECT_EQ(space.settings_at({0, 0, 1}), (TuningSettings{3000000, 2.3, 1}));

  for (const auto& env : std::vector<std::map<std::string, std::string>>{
           {{"CHORUS_SHM_ALLREDUCE", "auto"}}, {{"CHORUS_SHM_ALLREDUCE_THRESHOLD", "65536"}},
           {{"CHORUS_HIERARCHICAL_ALLREDUCE", "auto"}}}) {
    const TuningSpace fixed = standard_space(config_from(env), {"shm", "mpi"});
    EXPECT_FALSE(fixed.searches("algorithm"));
    EXPECT_EQ(fixed.dimensions()[2].coordinates.size(), 1u);
    EXPECT_EQ(fixed.value(fixed.settings_at(fixed.start()), "algorithm").label, "shm");
  }
  // A backend with one algorithm (several hosts, or shared memory off): fixed.
  const TuningSpace mpi_only = standard_space(config_from({}), {"mpi"});
  EXPECT_FALSE(mpi_only.searches("algorithm"));
  EXPECT_EQ(mpi_only.value(mpi_only.settings_at(mpi_only.start()), "algorithm").label, "mpi");
}

TEST(TuningSpace, AStartOffTheGridIsAddedToIt) {
  // Not set by the user, yet not on the grid: only when the defaults change;
  // forced here through a Config built by hand.
  Config config = config_from({});
  config.fusion_threshold_bytes = 5000000;
  config.cycle_time_ms = 0.25;
  const TuningSpace space = standard_space(config, {"mpi"});
  EXPECT_EQ(space.dimensions()[0].coordinates.size(), 16u);
  EXPECT_EQ(space.dimensions()[1].coordinates.size(), 22u);
  EXPECT_EQ(space.settings_at(space.start()), (TuningSettings{5000000, 0.25, 0}));
}

TEST(TuningSpace, AnotherKnobIsOneMoreDimension) {
  std::vector<TuningKnob> knobs = {fusion_threshold_knob(config_from({})), cycle_time_knob(config_from({})),
                                   algorithm_knob(config_from({}), {"shm", "mpi"}), chunk_knob()};
  const TuningSpace space(std::move(knobs));
  const auto dims = space.dimensions();
  ASSERT_EQ(dims.size(), 4u);
  EXPECT_EQ(dims[3].name, "chunk_elements");
  EXPECT_FALSE(dims[3].categorical);
  // 3000, the value at init(), joins the grid in order; log scale.
  ASSERT_EQ(dims[3].coordinates.size(), 5u);
  EXPECT_EQ(space.start(), (SearchPoint{12, 0, 0, 1}));
  EXPECT_NEAR(dims[3].coordinates[2], 2.0 / 6.0, 1e-12);  // 4096: 2 of 6 octaves above 1024
  EXPECT_TRUE(space.searches("chunk_elements"));
  const TuningSettings start = space.settings_at(space.start());
  EXPECT_EQ(start, (TuningSettings{64 << 20, 0.0, 0, 3000}));
  EXPECT_EQ(space.value(start, "chunk_elements").number, 3000);
  EXPECT_EQ(space.describe(space.settings_at({0, 1, 1, 4})),
            "fusion threshold 1048576 bytes, cycle time 0.5 ms, algorithm mpi, chunk 65536");
  EXPECT_EQ(space.format(space.settings_at({0, 1, 1, 4})),
            (std::vector<std::string>{"1048576", "0.5", "mpi", "65536"}));
}

TEST(TuningSpace, AppliesEveryKnobInOrderUntilAnError) {
  std::vector<std::string> applied;
  auto record = [&](const std::string& name, Status result) {
    return [&applied, name, result](const KnobValue& v) {
      applied.push_back(name + "=" + (v.label.empty() ? std::to_string(v.number) : v.label));
      return result;
    };
  };
  const Config config = config_from({});
  TuningSpace space({fusion_threshold_knob(config).applied_by(record("threshold", Status::OK())),
                     algorithm_knob(config, {"shm", "mpi"}).applied_by(record("algorithm", Status::OK())),
                     chunk_knob().applied_by(record("chunk", Status::OK()))});
  EXPECT_TRUE(space.apply({2097152, 1, 16384}).ok());
  EXPECT_EQ(applied,
            (std::vector<std::string>{"threshold=2097152.000000", "algorithm=mpi", "chunk=16384.000000"}));

  applied.clear();
  const Status refused = Status::InvalidArgument("no");
  TuningSpace failing({algorithm_knob(config, {"shm", "mpi"}).applied_by(record("algorithm", refused)),
                       chunk_knob().applied_by(record("chunk", Status::OK()))});
  EXPECT_EQ(failing.apply({0, 1024}).message(), "no");
  EXPECT_EQ(applied, std::vector<std::string>{"algorithm=shm"});

  // A knob the runtime declared without saying how to apply it.
  EXPECT_EQ(TuningSpace({chunk_knob()}).apply({1024}).message(),
            "autotune: knob 'chunk_elements' has no way to be applied");
}

TEST(TuningMessage, RoundTripsExactly) {
  TuningMessage m;
  m.generation = 42;
  m.frozen = true;
  m.settings = {123456789, 2.3, 3};
  const auto words = m.encode();
  ASSERT_EQ(words.size(), TuningMessage::words(3));
  ASSERT_EQ(words.size(), 5u);  // generation, flags, one word per knob
  const TuningMessage back = TuningMessage::decode(words, 3);
  EXPECT_EQ(back.generation, 42u);
  EXPECT_TRUE(back.frozen);
  EXPECT_EQ(back.settings, m.settings);  // the double's exact bits
  m.frozen = false;
  m.settings = {123456789, 2.3, 0};
  const TuningMessage again = TuningMessage::decode(m.encode(), 3);
  EXPECT_FALSE(again.frozen);
  EXPECT_EQ(again.settings[kAlgorithm], 0);
  EXPECT_EQ(TuningMessage::decode({}, 3).generation, 0u);  // nothing published
  EXPECT_EQ(TuningMessage::decode({7, 0}, 3).generation, 0u);  // too short for 3 knobs
}

TEST(TuningMessage, AnyNumberOfKnobsArriveExactlyThroughTheOr) {
  // Rank 0's words ORed with another rank's zeros, as the negotiation does;
  // values no grid holds (0.1 + 0.2, a cycle time set on rank 0 only, the
  // largest fusion threshold the config accepts) arrive bit for bit.
  TuningMessage m;
  m.generation = 3;
  m.settings = {1099511627776.0, 2.3, 1, 0.1 + 0.2};
  const std::vector<uint64_t> zeros(TuningMessage::words(4), 0);
  std::vector<uint64_t> words = m.encode();
  ASSERT_EQ(words.size(), zeros.size());
  for (size_t i = 0; i < words.size(); ++i) words[i] |= zeros[i];
  const TuningMessage back = TuningMessage::decode(words, 4);
  EXPECT_EQ(back.generation, 3u);
  EXPECT_FALSE(back.frozen);
  ASSERT_EQ(back.settings.size(), 4u);
  EXPECT_EQ(back.settings, m.settings);
  EXPECT_EQ(back.settings[3], 0.1 + 0.2);
}

TEST(AutotuneLog, WritesTheHeaderAndOneRowPerCall) {
  const std::string path = temporary_path();
  const TuningSpace space = standard_space(config_from({}), {"shm", "mpi"});
  {
    AutotuneLog log;
    ASSERT_TRUE(log.open(path, {"fusion_threshold_bytes", "cycle_time_ms", "algorithm"}).ok());
    ASSERT_TRUE(log.row(0, "start", space.format({64 << 20, 0.0, 0}), 1.5e9, true).ok());
    ASSERT_TRUE(log.row(1, "random", space.format({2965821, 7.5, 1}), 9.87654321e8, false).ok());
    ASSERT_TRUE(log.row(2, "frozen", space.format({64 << 20, 2.3, 0}), 1.5e9, true).ok());
  }
  EXPECT_EQ(read_file(path),
            "sample,kind,fusion_threshold_bytes,cycle_time_ms,algorithm,bytes_per_second,best\n"
            "0,start,67108864,0,shm,1.500000e+09,1\n"
            "1,random,2965821,7.5,mpi,9.876543e+08,0\n"
            "2,frozen,67108864,2.3,shm,1.500000e+09,1\n");
  unlink(path.c_str());
}

TEST(AutotuneLog, AnotherKnobIsAnotherColumn) {
  const std::string path = temporary_path();
  const TuningSpace space({cycle_time_knob(config_from({})), chunk_knob()});
  {
    AutotuneLog log;
    ASSERT_TRUE(log.open(path, {"cycle_time_ms", "chunk_elements"}).ok());
    ASSERT_TRUE(log.row(0, "start", space.format(space.settings_at(space.start())), 2e9, true).ok());
    // Values as set read back as set; large whole numbers stay whole.
    ASSERT_TRUE(log.row(1, "guided", space.format({0.1 + 0.2, 12345678901.0}), 1e9, false).ok());
  }
  EXPECT_EQ(read_file(path),
            "sample,kind,cycle_time_ms,chunk_elements,bytes_per_second,best\n"
            "0,start,0,3000,2.000000e+09,1\n"
            "1,guided,0.3,12345678901,1.000000e+09,0\n");
  unlink(path.c_str());
}

TEST(AutotuneLog, UnwritablePathIsAnErrorNamingIt) {
  AutotuneLog log;
  const Status status = log.open("/nonexistent-dir/at.csv", {"cycle_time_ms"});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "CHORUS_AUTOTUNE_LOG: cannot open '/nonexistent-dir/at.csv' for writing: No such file or directory");
  EXPECT_FALSE(log.enabled());
  EXPECT_TRUE(log.row(0, "start", {"0"}, 0.0, false).ok());  // a closed log writes nothing
}

TEST(AutotuneLog, AFailedWriteIsAnErrorNamingThePath) {
  // /dev/full opens, but every flush fails with ENOSPC.
  AutotuneLog log;
  const Status status = log.open("/dev/full", {"cycle_time_ms"});
  EXPECT_EQ(status.message(), "CHORUS_AUTOTUNE_LOG: cannot write to '/dev/full': No space left on device");
  EXPECT_FALSE(log.enabled());
}

}  // namespace
}  // namespace chorus
