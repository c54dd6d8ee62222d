#include "base/config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace chorus {
namespace {

// A fake environment: tests never touch the real one (setenv is not
// thread-safe and would leak between tests).
class FakeEnv {
 public:
  FakeEnv& set(const std::string& name, const std::string& value) {
    values_[name] = value;
    return *this;
  }
  Config::Lookup lookup() const {
    return [this](const char* name) -> const char* {
      const auto found = values_.find(name);
      return found == values_.end() ? nullptr : found->second.c_str();
    };
  }

 private:
  std::map<std::string, std::string> values_;
};

Status parse_one(const std::string& name, const std::string& value, Config* out) {
  FakeEnv env;
  env.set(name, value);
  return Config::from_env(out, env.lookup());
}

std::string error_for(const std::string& name, const std::string& value) {
  Config config;
  const Status status = parse_one(name, value, &config);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << name << "='" << value << "'";
  return status.message();
}

TEST(ConfigTest, DefaultsWhenNothingIsSet) {
  Config config;
  config.cache_capacity = 7;  // from_env must not keep stale values
  ASSERT_TRUE(Config::from_env(&config, FakeEnv().lookup()).ok());
  EXPECT_EQ(config.fusion_threshold_bytes, 64LL << 20);
  EXPECT_EQ(config.cycle_time_ms, 0.0);
  EXPECT_EQ(config.cache_capacity, 1024);
  EXPECT_EQ(config.timeline_path, "");
  EXPECT_EQ(config.stall_check_seconds, 60.0);
  EXPECT_EQ(config.stall_shutdown_seconds, 0.0);
  EXPECT_EQ(config.log_level, LogLevel::kWarning);
}

TEST(ConfigTest, ReadsEveryVariable) {
  FakeEnv env;
  env.set("CHORUS_FUSION_THRESHOLD", "1048576")
      .set("CHORUS_CYCLE_TIME_MS", "2.5")
      .set("CHORUS_CACHE_CAPACITY", "0")
      .set("CHORUS_TIMELINE", "/tmp/trace.json")
      .set("CHORUS_STALL_CHECK_SECONDS", "30")
      .set("CHORUS_STALL_SHUTDOWN_SECONDS", "120.5")
      .set("CHORUS_LOG_LEVEL", "debug");
  Config config;
  ASSERT_TRUE(Config::from_env(&config, env.lookup()).ok());
  EXPECT_EQ(config.fusion_threshold_bytes, 1048576);
  EXPECT_EQ(config.cycle_time_ms, 2.5);
  EXPECT_EQ(config.cache_capacity, 0);
  EXPECT_EQ(config.timeline_path, "/tmp/trace.json");
  EXPECT_EQ(config.stall_check_seconds, 30.0);
  EXPECT_EQ(config.stall_shutdown_seconds, 120.5);
  EXPECT_EQ(config.log_level, LogLevel::kDebug);
}

TEST(ConfigTest, FusionThresholdBounds) {
  Config config;
  ASSERT_TRUE(parse_one("CHORUS_FUSION_THRESHOLD", "0", &config).ok());
  EXPECT_EQ(config.fusion_threshold_bytes, 0);
  ASSERT_TRUE(parse_one("CHORUS_FUSION_THRESHOLD", "1099511627776", &config).ok());
  EXPECT_EQ(config.fusion_threshold_bytes, int64_t{1} << 40);
}

TEST(ConfigTest, FusionThresholdRejectsWhatIsNotAPlainIntegerInRange) {
  const std::string expected = "expected an integer number of bytes in [0, 1099511627776]";
  EXPECT_EQ(error_for("CHORUS_FUSION_THRESHOLD", "12abc"),
            "CHORUS_FUSION_THRESHOLD='12abc' is invalid: " + expected);
  for (const char* bad : {"-1", "", " 12", "12 ", "+12", "1.5", "1e3", "0x10", "1099511627777",
                          "99999999999999999999999", "abc"}) {
    EXPECT_EQ(error_for("CHORUS_FUSION_THRESHOLD", bad),
              std::string("CHORUS_FUSION_THRESHOLD='") + bad + "' is invalid: " + expected);
  }
}

TEST(ConfigTest, CycleTime) {
  Config config;
  for (const char* good : {"0", "1", "0.25", "10000", "1e3"}) {
    EXPECT_TRUE(parse_one("CHORUS_CYCLE_TIME_MS", good, &config).ok()) << good;
  }
  EXPECT_EQ(config.cycle_time_ms, 1000.0);
  EXPECT_EQ(error_for("CHORUS_CYCLE_TIME_MS", "abc"),
            "CHORUS_CYCLE_TIME_MS='abc' is invalid: expected a number of milliseconds in [0, 10000]");
  for (const char* bad : {"", "-0.5", "10000.1", "nan", "NaN", "inf", "-inf", "infinity", "1ms",
                          " 1", "1e400"}) {
    EXPECT_EQ(error_for("CHORUS_CYCLE_TIME_MS", bad),
              std::string("CHORUS_CYCLE_TIME_MS='") + bad +
                  "' is invalid: expected a number of milliseconds in [0, 10000]");
  }
}

TEST(ConfigTest, CacheCapacity) {
  Config config;
  ASSERT_TRUE(parse_one("CHORUS_CACHE_CAPACITY", "1000000", &config).ok());
  EXPECT_EQ(config.cache_capacity, 1000000);
  for (const char* bad : {"1000001", "-1", "", "10.0", "lots"}) {
    EXPECT_EQ(error_for("CHORUS_CACHE_CAPACITY", bad),
              std::string("CHORUS_CACHE_CAPACITY='") + bad +
                  "' is invalid: expected an integer number of entries in [0, 1000000]");
  }
}

TEST(ConfigTest, TimelineEmptyCountsAsUnset) {
  Config config;
  ASSERT_TRUE(parse_one("CHORUS_TIMELINE", "", &config).ok());
  EXPECT_EQ(config.timeline_path, "");
  ASSERT_TRUE(parse_one("CHORUS_TIMELINE", "relative/with space.json", &config).ok());
  EXPECT_EQ(config.timeline_path, "relative/with space.json");
}

TEST(ConfigTest, StallSeconds) {
  for (const char* name : {"CHORUS_STALL_CHECK_SECONDS", "CHORUS_STALL_SHUTDOWN_SECONDS"}) {
    Config config;
    ASSERT_TRUE(parse_one(name, "86400", &config).ok()) << name;
    ASSERT_TRUE(parse_one(name, "0", &config).ok()) << name;
    ASSERT_TRUE(parse_one(name, "0.5", &config).ok()) << name;
    for (const char* bad : {"86400.5", "-1", "", "nan", "inf", "60s"}) {
      EXPECT_EQ(error_for(name, bad), std::string(name) + "='" + bad +
                                          "' is invalid: expected a number of seconds in [0, 86400]");
    }
  }
  Config config;
  ASSERT_TRUE(parse_one("CHORUS_STALL_CHECK_SECONDS", "0.5", &config).ok());
  EXPECT_EQ(config.stall_check_seconds, 0.5);
  EXPECT_EQ(config.stall_shutdown_seconds, 0.0);
  ASSERT_TRUE(parse_one("CHORUS_STALL_SHUTDOWN_SECONDS", "300", &config).ok());
  EXPECT_EQ(config.stall_shutdown_seconds, 300.0);
  EXPECT_EQ(config.stall_check_seconds, 60.0);
}

TEST(ConfigTest, HeartbeatTimeoutIsOffOrAtLeastHalfASecond) {
  Config config;
  EXPECT_EQ(config.heartbeat_timeout_seconds, 30.0);
  for (const char* good : {"0", "0.5", "3", "86400"}) {
    ASSERT_TRUE(parse_one("CHORUS_HEARTBEAT_TIMEOUT_SECONDS", good, &config).ok()) << good;
    EXPECT_EQ(config.heartbeat_timeout_seconds, std::stod(good));
  }
  for (const char* bad : {"0.1", "0.49", "-1", "", "nan", "86401", "30s"}) {
    EXPECT_EQ(error_for("CHORUS_HEARTBEAT_TIMEOUT_SECONDS", bad),
              std::string("CHORUS_HEARTBEAT_TIMEOUT_SECONDS='") + bad +
                  "' is invalid: expected 0 (off) or a number of seconds in [0.5, 86400]");
  }
  ASSERT_TRUE(parse_one("CHORUS_HEARTBEAT_INTERFACE", "eth0,10.200.0.0/24", &config).ok());
  EXPECT_EQ(config.heartbeat_interface, "eth0,10.200.0.0/24");
}

TEST(ConfigTest, LogLevelIsCaseInsensitive) {
  const std::pair<const char*, LogLevel> cases[] = {
      {"trace", LogLevel::kTrace},     {"DEBUG", LogLevel::kDebug}, {"Info", LogLevel::kInfo},
      {"wArNiNg", LogLevel::kWarning}, {"error", LogLevel::kError},
  };
  for (const auto& [text, level] : cases) {
    Config config;
    ASSERT_TRUE(parse_one("CHORUS_LOG_LEVEL", text, &config).ok()) << text;
    EXPECT_EQ(config.log_level, level) << text;
  }
  for (const char* bad : {"", "warn", "verbose", "info "}) {
    EXPECT_EQ(error_for("CHORUS_LOG_LEVEL", bad),
              std::string("CHORUS_LOG_LEVEL='") + bad +
                  "' is invalid: expected one of trace, debug, info, warning, error");
  }
}

TEST(ConfigTest, CudaDeviceIsAnIndexOrUnset) {
  Config config;
  ASSERT_TRUE(Config::from_env(&config, FakeEnv().lookup()).ok());
  EXPECT_EQ(config.cuda_device, -1) << "unset: bound from the local rank";
  ASSERT_TRUE(parse_one("CHORUS_CUDA_DEVICE", "0", &config).ok());
  EXPECT_EQ(config.cuda_device, 0);
  ASSERT_TRUE(parse_one("CHORUS_CUDA_DEVICE", "1023", &config).ok());
  EXPECT_EQ(config.cuda_device, 1023);
  for (const char* bad : {"", "-1", "1024", "cuda:0", "0x1", " 1", "1.0"}) {
    EXPECT_EQ(error_for("CHORUS_CUDA_DEVICE", bad),
              std::string("CHORUS_CUDA_DEVICE='") + bad +
                  "' is invalid: expected a CUDA device index in [0, 1023] (among the GPUs this process sees)");
  }
}

TEST(ConfigTest, GpuBackendMode) {
  Config config;
  ASSERT_TRUE(Config::from_env(&config, FakeEnv().lookup()).ok());
  EXPECT_EQ(config.gpu_backend, GpuBackendMode::kAuto);
  for (GpuBackendMode mode : {GpuBackendMode::kAuto, GpuBackendMode::kNccl, GpuBackendMode::kStaged}) {
    ASSERT_TRUE(parse_one("CHORUS_GPU_BACKEND", gpu_backend_mode_name(mode), &config).ok());
    EXPECT_EQ(config.gpu_backend, mode);
  }
  for (const char* bad : {"", "NCCL", "mpi", "host", "on"}) {
    EXPECT_EQ(error_for("CHORUS_GPU_BACKEND", bad),
              std::string("CHORUS_GPU_BACKEND='") + bad + "' is invalid: expected one of auto, nccl, staged");
  }
}

TEST(ConfigTest, FailureLeavesOutputUntouched) {
  FakeEnv env;
  env.set("CHORUS_CACHE_CAPACITY", "5").set("CHORUS_LOG_LEVEL", "loud");
  Config config;
  config.cycle_time_ms = 3.0;
  EXPECT_FALSE(Config::from_env(&config, env.lookup()).ok());
  EXPECT_EQ(config.cache_capacity, 1024);
  EXPECT_EQ(config.cycle_time_ms, 3.0);
}

TEST(ConfigTest, DefaultLookupReadsTheProcessEnvironment) {
  // Only checks that the getenv path runs; the real environment of a test
  // run has no CHORUS_* variables unless someone exported them on purpose.
  Config config;
  const Status status = Config::from_env(&config);
  EXPECT_TRUE(status.ok() || status.code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace chorus
