// Single-process parts of the hierarchical allreduce's setup: the
// CHORUS_HIERARCHICAL_ALLREDUCE variable and which allreduces take the
// hierarchical path (HierarchicalSelection).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/config.h"
#include "ops/shm/hierarchical_backend.h"

namespace chorus {
namespace {

Status parse(std::map<std::string, std::string> values, Config* config) {
  return Config::from_env(config, [&values](const char* name) -> const char* {
    const auto found = values.find(name);
    return found == values.end() ? nullptr : found->second.c_str();
  });
}

TEST(HierarchicalSetup, ConfigDefaultIsAutoAndEveryModeParses) {
  Config config;
  ASSERT_TRUE(parse({}, &config).ok());
  EXPECT_EQ(config.hierarchical_allreduce, AutoOnOff::kAuto);
  const std::map<std::string, AutoOnOff> modes = {
      {"auto", AutoOnOff::kAuto}, {"on", AutoOnOff::kOn}, {"off", AutoOnOff::kOff}};
  for (const auto& [text, mode] : modes) {
    ASSERT_TRUE(parse({{"CHORUS_HIERARCHICAL_ALLREDUCE", text}}, &config).ok()) << text;
    EXPECT_EQ(config.hierarchical_allreduce, mode) << text;
  }
  // Independent of the one-host setting.
  ASSERT_TRUE(parse({{"CHORUS_HIERARCHICAL_ALLREDUCE", "on"}, {"CHORUS_SHM_ALLREDUCE", "off"}}, &config).ok());
  EXPECT_EQ(config.hierarchical_allreduce, AutoOnOff::kOn);
  EXPECT_EQ(config.shm_allreduce, AutoOnOff::kOff);
}

TEST(HierarchicalSetup, ConfigRefusesBadValuesNamingWhatIsAccepted) {
  Config config;
  for (const char* bad : {"ON", "1", "true", "", " auto"}) {
    const Status s = parse({{"CHORUS_HIERARCHICAL_ALLREDUCE", bad}}, &config);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(s.message(),
              std::string("CHORUS_HIERARCHICAL_ALLREDUCE='") + bad + "' is invalid: expected one of auto, on, off");
  }
}

TEST(HierarchicalSetup, OnTakesEveryAllreduceAndOffNone) {
  const HierarchicalSelection on{AutoOnOff::kOn, 1 << 20, 4};
  const HierarchicalSelection off{AutoOnOff::kOff, 0, 4};
  for (DataType dtype : {DataType::kInt8, DataType::kFloat16, DataType::kFloat32}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      for (int64_t bytes : {int64_t{0}, int64_t{4}, int64_t{1} << 30}) {
        EXPECT_TRUE(on.use_hierarchical(bytes, dtype, op));
        EXPECT_FALSE(off.use_hierarchical(bytes, dtype, op));
      }
    }
  }
}

TEST(HierarchicalSetup, AutoBySizeExceptOrderDependentFloatReductions) {
  const HierarchicalSelection s{AutoOnOff::kAuto, 1000, 4};
  // Exact on both paths: by size.
  for (DataType dtype : {DataType::kUInt8, DataType::kInt32, DataType::kInt64}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax}) {
      EXPECT_FALSE(s.use_hierarchical(999, dtype, op));
      EXPECT_TRUE(s.use_hierarchical(1000, dtype, op));
    }
  }
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    EXPECT_FALSE(s.use_hierarchical(999, dtype, ReduceOp::kMin));
    EXPECT_FALSE(s.use_hierarchical(999, dtype, ReduceOp::kMax));
    EXPECT_TRUE(s.use_hierarchical(1000, dtype, ReduceOp::kMax));
    // The fold order shows in the bits: one path whatever the size.
    EXPECT_TRUE(s.use_hierarchical(4, dtype, ReduceOp::kSum));
    EXPECT_TRUE(s.use_hierarchical(4, dtype, ReduceOp::kProduct));
  }
  // On 2 ranks every order is the same: by size again.
  const HierarchicalSelection two{AutoOnOff::kAuto, 1000, 2};
  EXPECT_FALSE(two.use_hierarchical(999, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_TRUE(two.use_hierarchical(1000, DataType::kFloat32, ReduceOp::kSum));
}

}  // namespace
}  // namespace chorus
