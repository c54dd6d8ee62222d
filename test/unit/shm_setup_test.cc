// Single-process parts of the shared-memory allreduce's setup: the
// CHORUS_SHM_ALLREDUCE* variables, the path selection, segments (create,
// open, unlink, refusal of a wrong size) and the removal of stale segments
// left by a creator that is gone.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>

#include "base/config.h"
#include "ops/process_liveness.h"
#include "ops/shm/shm_segment.h"
#include "ops/shm/shm_selection.h"

namespace chorus {
namespace {

Status parse(std::map<std::string, std::string> values, Config* config) {
  return Config::from_env(config, [&values](const char* name) -> const char* {
    const auto found = values.find(name);
    return found == values.end() ? nullptr : found->second.c_str();
  });
}

TEST(ShmSetup, ConfigDefaultsAndValues) {
  Config config;
  ASSERT_TRUE(parse({}, &config).ok());
  EXPECT_EQ(config.shm_allreduce, AutoOnOff::kAuto);
  EXPECT_EQ(config.shm_allreduce_threshold_bytes, 64 << 10);
  ASSERT_TRUE(parse({{"CHORUS_SHM_ALLREDUCE", "off"}, {"CHORUS_SHM_ALLREDUCE_THRESHOLD", "0"}}, &config).ok());
  EXPECT_EQ(config.shm_allreduce, AutoOnOff::kOff);
  EXPECT_EQ(config.shm_allreduce_threshold_bytes, 0);
  ASSERT_TRUE(parse({{"CHORUS_SHM_ALLREDUCE", "on"}, {"CHORUS_SHM_ALLREDUCE_THRESHOLD", "1099511627776"}}, &config).ok());
  EXPECT_EQ(config.shm_allreduce, AutoOnOff::kOn);
  EXPECT_EQ(config.shm_allreduce_threshold_bytes, int64_t{1} << 40);
}

TEST(ShmSetup, ConfigRefusesBadValuesNamingWhatIsAccepted) {
  Config config;
  for (const char* bad : {"ON", "yes", "", "auto "}) {
    const Status s = parse({{"CHORUS_SHM_ALLREDUCE", bad}}, &config);
    EXPECT_EQ(s.message(), std::string("CHORUS_SHM_ALLREDUCE='") + bad + "' is invalid: expected one of auto, on, off");
  }
  for (const char* bad : {"-1", "1099511627777", "64KiB", " 5", ""}) {
    const Status s = parse({{"CHORUS_SHM_ALLREDUCE_THRESHOLD", bad}}, &config);
    EXPECT_EQ(s.message(), std::string("CHORUS_SHM_ALLREDUCE_THRESHOLD='") + bad +
                               "' is invalid: expected an integer number of bytes in [0, 1099511627776]");
  }
}

TEST(ShmSetup, SelectionBySizeModeAndDtype) {
  ShmAllreduceSelection s{AutoOnOff::kAuto, 1000, 2, {}};
  EXPECT_FALSE(s.use_shm(999, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_TRUE(s.use_shm(1000, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_FALSE(s.use_shm(10, DataType::kFloat16, ReduceOp::kSum));  // 2 ranks: both paths round once
  s.ranks = 3;
  EXPECT_TRUE(s.use_shm(10, DataType::kFloat16, ReduceOp::kSum));   // one path whatever the size
  EXPECT_TRUE(s.use_shm(10, DataType::kBFloat16, ReduceOp::kProduct));
  EXPECT_FALSE(s.use_shm(10, DataType::kBFloat16, ReduceOp::kMax));  // min/max are exact
  EXPECT_FALSE(s.use_shm(10, DataType::kFloat32, ReduceOp::kSum));
  s.mode = AutoOnOff::kOn;
  EXPECT_TRUE(s.use_shm(0, DataType::kInt8, ReduceOp::kMin));
  s.mode = AutoOnOff::kOff;
  EXPECT_FALSE(s.use_shm(int64_t{1} << 30, DataType::kFloat16, ReduceOp::kSum));
}

TEST(ShmSetup, SegmentIsSharedBetweenMappingsAndSurvivesUnlink) {
  const std::string name = make_segment_name();
  std::unique_ptr<ShmSegment> a, b;
  ASSERT_TRUE(ShmSegment::create(name, 8192, &a).ok());
  EXPECT_FALSE(ShmSegment::create(name, 8192, &b).ok()) << "creation must be exclusive";
  const Status wrong = ShmSegment::open(name, 4096, &b);
  EXPECT_NE(wrong.message().find("is 8192 bytes, expected 4096"), std::string::npos) << wrong.message();
  ASSERT_TRUE(ShmSegment::open(name, 8192, &b).ok());
  ASSERT_TRUE(ShmSegment::unlink(name).ok());
  EXPECT_EQ(access(("/dev/shm" + name).c_str(), F_OK), -1) << "the name must be gone";
  std::memcpy(a->data(), "chorus", 7);
  EXPECT_STREQ(static_cast<const char*>(b->data()), "chorus");
  const Status gone = ShmSegment::open(name, 8192, &b);
  EXPECT_NE(gone.message().find("No such file"), std::string::npos) << gone.message();
}

TEST(ShmSetup, StaleSegmentsOfDeadCreatorsAreRemovedOthersKept) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  // Before it is reaped the child is a zombie, which counts as gone too.
  const std::string dead = "/" + std::string(kShmSegmentPrefix) + std::to_string(child) + ".00000000deadbeef";
  const std::string live = "/" + std::string(kShmSegmentPrefix) + std::to_string(getpid()) + ".00000000feedbeef";
  for (const std::string& name : {dead, live}) {
    const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  int waited = 0;
  while (process_alive(child) && waited++ < 1000) usleep(1000);
  EXPECT_FALSE(process_alive(child));
  EXPECT_GE(remove_stale_segments(), 1);
  EXPECT_EQ(access(("/dev/shm" + dead).c_str(), F_OK), -1);
  EXPECT_EQ(access(("/dev/shm" + live).c_str(), F_OK), 0);
  shm_unlink(live.c_str());
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(process_alive(getpid()));
}

}  // namespace
}  // namespace chorus
