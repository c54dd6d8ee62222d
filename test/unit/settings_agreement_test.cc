// The settings agreement at init() (settings_agreement.h), over the
// in-memory transport: one thread per rank, each with its own Config.
#include "protocol/settings_agreement.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "fake_transport.h"

namespace chorus {
namespace {

// Runs agree_on_settings on `configs.size()` ranks; rank r reports
// `locals[r]` (OK when absent) as whether it could read its environment.
std::vector<Status> agree(const std::vector<Config>& configs, const std::vector<Status>& locals = {}) {
  test::FakeWorld world(static_cast<int>(configs.size()));
  std::vector<Status> results(configs.size());
  std::vector<std::thread> ranks;
  for (size_t r = 0; r < configs.size(); ++r) {
    ranks.emplace_back([&, r] {
      test::FakeTransport transport(&world, static_cast<int>(r));
      const Status local = r < locals.size() ? locals[r] : Status::OK();
      results[r] = agree_on_settings(&transport, local, configs[r]);
    });
  }
  for (std::thread& t : ranks) t.join();
  return results;
}

std::vector<int64_t> values(const Config& config) {
  std::vector<int64_t> out;
  for (const AlikeSetting& s : alike_settings(config)) out.push_back(s.value);
  return out;
}

TEST(SettingsAgreement, RanksWithTheSameSettingsAgree) {
  Config config;
  config.fusion_threshold_bytes = 1 << 20;
  config.shm_allreduce = AutoOnOff::kOff;
  for (const Status& s : agree({config, config, config})) EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(SettingsAgreement, SettingsOfRankZeroAloneMayDiffer) {
  // Rank 0's: cycle time and stall settings; this rank's: the log level and its GPU.
  Config zero, other;
  zero.cycle_time_ms = 5;
  zero.stall_check_seconds = 2;
  other.log_level = LogLevel::kDebug;
  other.cuda_device = 1;  // this rank's GPU
  for (const Status& s : agree({zero, other})) EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(SettingsAgreement, EveryAlikeSettingThatDiffersFailsEveryRank) {
  for (const AlikeSetting& setting : alike_settings(Config())) {
    SCOPED_TRACE(setting.variable);
    Config base, odd;
    // Change exactly this setting on rank 2.
    if (std::string(setting.variable) == "CHORUS_AUTOTUNE") odd.autotune = true;
    if (std::string(setting.variable) == "CHORUS_FUSION_THRESHOLD") odd.fusion_threshold_bytes = 0;
    if (std::string(setting.variable) == "CHORUS_CACHE_CAPACITY") odd.cache_capacity = 1088;
    if (std::string(setting.variable) == "CHORUS_SHM_ALLREDUCE") odd.shm_allreduce = AutoOnOff::kOff;
    if (std::string(setting.variable) == "CHORUS_SHM_ALLREDUCE_THRESHOLD") odd.shm_allreduce_threshold_bytes = 4096;
    if (std::string(setting.variable) == "CHORUS_SHM_PROBE") odd.shm_probe = ShmProbeMode::kOff;
    if (std::string(setting.variable) == "CHORUS_HIERARCHICAL_ALLREDUCE") {
      odd.hierarchical_allreduce = AutoOnOff::kOn;
    }
    if (std::string(setting.variable) == "CHORUS_GPU_BACKEND") odd.gpu_backend = GpuBackendMode::kStaged;
    if (std::string(setting.variable) == "CHORUS_HEARTBEAT_TIMEOUT_SECONDS") odd.heartbeat_timeout_seconds = 2.5;
    ASSERT_NE(values(odd), values(base)) << "the test changed nothing";
    const std::vector<Status> results = agree({base, base, odd});
    EXPECT_EQ(results[2].code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(results[2].message().rfind(std::string(setting.variable) + " must be the same on every rank: rank 2 has ",
                                         0),
              0u)
        << results[2].message();
    for (int r : {0, 1}) {
      EXPECT_EQ(results[r].code(), StatusCode::kAborted);
      EXPECT_EQ(results[r].message(), std::string("Chorus has ") + setting.variable +
                                          " different from rank 0 on rank(s) [2]; every rank must hold the same "
                                          "value, so none starts");
    }
  }
}

// The probe is a collective: a rank that gave a threshold alone (so its
// probe is off) against one that measures fails init, named as the probe.
TEST(SettingsAgreement, AThresholdGivenOnOneRankOnlyTurnsItsProbeOffAndFailsEveryRank) {
  Config base, odd;
  odd.shm_allreduce_threshold_given = true;
  const std::vector<Status> results = agree({base, odd});
  EXPECT_EQ(results[1].message(), "CHORUS_SHM_PROBE must be the same on every rank: rank 1 has off, rank 0 has cached");
  EXPECT_EQ(results[0].code(), StatusCode::kAborted);
}

TEST(SettingsAgreement, ModesAreSpelledAsTheVariableTakesThem) {
  Config base, odd;
  odd.shm_allreduce = AutoOnOff::kOff;
  EXPECT_EQ(agree({base, odd})[1].message(),
            "CHORUS_SHM_ALLREDUCE must be the same on every rank: rank 1 has off, rank 0 has auto");
}

TEST(SettingsAgreement, TheGpuBackendIsSpelledAsTheVariableTakesIt) {
  Config base, odd;
  odd.gpu_backend = GpuBackendMode::kNccl;
  EXPECT_EQ(agree({base, odd})[1].message(),
            "CHORUS_GPU_BACKEND must be the same on every rank: rank 1 has nccl, rank 0 has auto");
}

TEST(SettingsAgreement, ARankThatCouldNotReadItsEnvironmentFailsEveryRank) {
  const Status bad = Status::InvalidArgument("CHORUS_CACHE_CAPACITY='lots' is invalid: expected ...");
  // Its (default) settings differ too, but the failed start is what counts.
  Config odd;
  odd.fusion_threshold_bytes = 0;
  const std::vector<Status> results = agree({Config(), odd, Config()}, {Status::OK(), bad, Status::OK()});
  EXPECT_EQ(results[1].code(), bad.code());
  EXPECT_EQ(results[1].message(), bad.message());
  for (int r : {0, 2}) {
    EXPECT_EQ(results[r].code(), StatusCode::kAborted);
    EXPECT_EQ(results[r].message(),
              "Chorus could not start on rank(s) [1]; their own error says why, so this rank does not start either");
  }
}

}  // namespace
}  // namespace chorus
