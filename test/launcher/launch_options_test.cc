#include "options/launch_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "options/runtime_settings.h"
#include "options/usage_error.h"
#include "support/chorus_error_of.h"

namespace chorus::launcher {
namespace {

// The message of the UsageError a call throws.
constexpr auto error_of = chorus_test::error_of<UsageError>;

using Strings = std::vector<std::string>;
using ::testing::HasSubstr;

LaunchOptions parse(const Strings& args) { return parse_launch_options(args); }

TEST(LaunchOptions, SplitsAtSeparatorOrFirstNonOption) {
  LaunchOptions o = parse({"-np", "4", "-H", "a:2,b:2", "--", "./train", "--epochs", "3"});
  ASSERT_TRUE(o.np.has_value());
  EXPECT_EQ(*o.np, 4);
  EXPECT_EQ(o.host_list, "a:2,b:2");
  EXPECT_EQ(o.program, (Strings{"./train", "--epochs", "3"}));

  // Without "--": the program starts at the first word that is not an
  // option or an option's value; its own options stay its own.
  o = parse({"--np", "2", "--verbose", "./train", "-np", "9", "--", "x"});
  EXPECT_EQ(*o.np, 2);
  EXPECT_TRUE(o.verbose);
  EXPECT_EQ(o.program, (Strings{"./train", "-np", "9", "--", "x"}));

  o = parse({"-x", "A=1", "-xB", "--export=C", "--fusion-threshold-mb=2", "prog"});
  EXPECT_EQ(o.exports, (Strings{"A=1", "B", "C"}));
  EXPECT_EQ(o.program, (Strings{"prog"}));
}

TEST(LaunchOptions, RuntimeFlagsBecomeValidatedVariables) {
  const LaunchOptions o = parse({"-np", "2", "--fusion-threshold-mb", "1.5", "--cycle-time-ms", "2.5",
                                 "--cache-capacity", "0", "--timeline-filename", "/tmp/t.json",
                                 "--stall-check-seconds", "30", "--stall-shutdown-seconds", "120",
                                 "--heartbeat-timeout-seconds", "5", "--log-level", "debug", "prog"});
  EXPECT_EQ(o.runtime_variables, (std::vector<std::pair<std::string, std::string>>{
                                     {"CHORUS_FUSION_THRESHOLD", "1572864"},
                                     {"CHORUS_CYCLE_TIME_MS", "2.5"},
                                     {"CHORUS_CACHE_CAPACITY", "0"},
                                     {"CHORUS_TIMELINE", "/tmp/t.json"},
                                     {"CHORUS_STALL_CHECK_SECONDS", "30"},
                                     {"CHORUS_STALL_SHUTDOWN_SECONDS", "120"},
                                     {"CHORUS_HEARTBEAT_TIMEOUT_SECONDS", "5"},
                                     {"CHORUS_LOG_LEVEL", "debug"}}));
}

TEST(LaunchOptions, RuntimeFlagsOutOfRangeNameTheFlagAndTheRange) {
  EXPECT_EQ(error_of([] { parse({"-np", "2", "--cycle-time-ms", "-1", "p"}); }),
            "--cycle-time-ms='-1' is invalid: expected a number of milliseconds in [0, 10000]");
  EXPECT_EQ(error_of([] { parse({"-np", "2", "--cycle-time-ms", "10001", "p"}); }),
            "--cycle-time-ms='10001' is invalid: expected a number of milliseconds in [0, 10000]");
  EXPECT_EQ(error_of([] { parse({"-np", "2", "--cache-capacity", "1e3", "p"}); }),
            "--cache-capacity='1e3' is invalid: expected an integer number of entries in [0, 1000000]");
  EXPECT_EQ(error_of([] { parse({"-np", "2", "--stall-check-seconds", "nan", "p"}); }),
            "--stall-check-seconds='nan' is invalid: expected a number of seconds in [0, 86400]");
  EXPECT_EQ(error_of([] { parse({"-np", "2", "--stall-shutdown-seconds", "86401", "p"}); }),
            "--stall-shutdown-seconds='86401' is invalid: expected a number of seconds in [0, 86400]");
  EXPECT_EQ(error_of([] { parse({"-np", "2", "--heartbeat-timeout-seconds", "0.2", "p"}); }),
            "--heartbeat-timeout-seconds='0.2' is invalid: expected 0 (off) or a number of seconds in [0.5, 86400]");
  EXPECT_EQ(error_of([] { parse({"-np", "2", "--log-level", "loud", "p"}); }),
            "--log-level='loud' is invalid: expected one of trace, debug, info, warning, error");
  EXPECT_EQ(error_of([] { parse({"-np", "2", "--fusion-threshold-mb", "-3", "p"}); }),
            "--fusion-threshold-mb='-3' is invalid: expected a number of MiB in [0, 1048576]");
  EXPECT_EQ(error_of([] { parse({"-np", "2", "--fusion-threshold-mb", "2000000", "p"}); }),
            "--fusion-threshold-mb='2000000' is invalid: expected a number of MiB in [0, 1048576]");
}

TEST(LaunchOptions, BadFlagsNameWhatWasExpected) {
  EXPECT_EQ(error_of([] { parse({"-np", "0", "p"}); }),
            "-np='0' is invalid: expected a positive integer number of ranks");
  EXPECT_EQ(error_of([] { parse({"-np", "two", "p"}); }),
            "-np='two' is invalid: expected a positive integer number of ranks");
  EXPECT_EQ(error_of([] { parse({"-np", "2"}); }),
            "no program to run: expected chorusrun [options] [--] PROGRAM [ARGS...]");
  EXPECT_EQ(error_of([] { parse({"-H", "a", "--hostfile", "f", "p"}); }),
            "-H and --hostfile were both given: expected one of them");
  EXPECT_EQ(error_of([] { parse({"--launcher", "ssh", "p"}); }), "--launcher='ssh' is invalid: expected mpirun or srun");
  EXPECT_EQ(error_of([] { parse({"--bind-to", "numa", "p"}); }),
            "--bind-to='numa' is invalid: expected auto, none, core or socket");
  EXPECT_EQ(error_of([] { parse({"--start-timeout", "0", "p"}); }),
            "--start-timeout='0' is invalid: expected a number of seconds in (0, 86400]");
  EXPECT_EQ(error_of([] { parse({"--tag-output", "--no-tag-output", "p"}); }),
            "--tag-output and --no-tag-output were both given: expected one of them");
  EXPECT_EQ(error_of([] { parse({"--network-interface", "eth0,", "p"}); }),
            "--network-interface='eth0,' is invalid: expected interface names or IPv4 subnets such as eth0 or "
            "10.0.0.0/24, comma-separated");
  EXPECT_EQ(error_of([] { parse({"--network-interface", "eth 0", "p"}); }),
            "--network-interface='eth 0' is invalid at 'eth 0': expected interface names or IPv4 subnets such as eth0 "
            "or 10.0.0.0/24, comma-separated");
  EXPECT_EQ(error_of([] { parse({"--mpi-args", "--mca 'x", "p"}); }), "--mpi-args has an unclosed ' quote");
  EXPECT_THAT(error_of([] { parse({"--frobnicate", "p"}); }),
              HasSubstr("unrecognised option '--frobnicate' (chorusrun --help lists the options)"));
  EXPECT_THAT(error_of([] { parse({"--verb", "p"}); }), HasSubstr("unrecognised option '--verb'"));
}

TEST(LaunchOptions, MpiArgsAreSplitLikeAShell) {
  const LaunchOptions o = parse({"--mpi-args", "--mca plm_rsh_agent '/a b/rsh' -x \"Q=1 2\" a\\ b", "p"});
  EXPECT_EQ(o.mpi_args, (Strings{"--mca", "plm_rsh_agent", "/a b/rsh", "-x", "Q=1 2", "a b"}));
}

TEST(LaunchOptions, TagOutputDefaultsAreLeftToThePlan) {
  EXPECT_FALSE(parse({"p"}).tag_output.has_value());
  EXPECT_EQ(parse({"--no-tag-output", "p"}).tag_output, std::optional<bool>(false));
  EXPECT_EQ(parse({"--tag-output", "p"}).tag_output, std::optional<bool>(true));
}

TEST(LaunchOptions, HelpAndCheckBuildNeedNoProgram) {
  EXPECT_TRUE(parse({"--help"}).help);
  EXPECT_TRUE(parse({"--check-build"}).check_build);
  EXPECT_THAT(launch_usage(), HasSubstr("--fusion-threshold-mb"));
}

TEST(LaunchOptions, AutotuneAndSharedMemoryFlags) {
  LaunchOptions o = parse({"-np", "2", "--autotune", "--autotune-log", "/tmp/tune.csv", "--shm-allreduce", "off",
                           "--shm-allreduce-threshold", "1048576", "prog", "--autotune"});
  EXPECT_EQ(o.runtime_variables, (std::vector<std::pair<std::string, std::string>>{
                                     {"CHORUS_SHM_ALLREDUCE", "off"},
                                     {"CHORUS_SHM_ALLREDUCE_THRESHOLD", "1048576"},
                                     {"CHORUS_AUTOTUNE", "1"},
                                     {"CHORUS_AUTOTUNE_LOG", "/tmp/tune.csv"}}));
  // --autotune takes no value: the next word is the program; the program's
  // own --autotune stays the program's.
  EXPECT_EQ(o.program, (Strings{"prog", "--autotune"}));
  o = parse({"--autotune", "./train", "--epochs", "3"});
  EXPECT_EQ(o.runtime_variables, (std::vector<std::pair<std::string, std::string>>{{"CHORUS_AUTOTUNE", "1"}}));
  EXPECT_EQ(o.program, (Strings{"./train", "--epochs", "3"}));
  // Not given: nothing is set, so the ranks' defaults (autotuning off) apply.
  EXPECT_TRUE(parse({"prog"}).runtime_variables.empty());
  EXPECT_EQ(parse({"--shm-allreduce=auto", "p"}).runtime_variables,
            (std::vector<std::pair<std::string, std::string>>{{"CHORUS_SHM_ALLREDUCE", "auto"}}));
}

TEST(LaunchOptions, BadAutotuneAndSharedMemoryFlagsNameWhatWasExpected) {
  EXPECT_EQ(error_of([] { parse({"--shm-allreduce", "yes", "p"}); }),
            "--shm-allreduce='yes' is invalid: expected one of auto, on, off");
  EXPECT_EQ(error_of([] { parse({"--shm-allreduce-threshold", "64KiB", "p"}); }),
            "--shm-allreduce-threshold='64KiB' is invalid: expected an integer number of bytes in [0, 1099511627776]");
  EXPECT_EQ(error_of([] { parse({"--shm-allreduce-threshold", "-1", "p"}); }),
            "--shm-allreduce-threshold='-1' is invalid: expected an integer number of bytes in [0, 1099511627776]");
  EXPECT_EQ(error_of([] { parse({"--autotune-log", "/tmp/t.csv", "p"}); }),
            "--autotune-log was given without --autotune: expected both (the log lists the autotuner's samples)");
  EXPECT_THAT(error_of([] { parse({"--autotune=1", "p"}); }), HasSubstr("--autotune"));
  // The variables themselves, forwarded with -x, are checked like init() does.
  EXPECT_EQ(error_of([] { check_runtime_variable("CHORUS_AUTOTUNE", "yes", "-x CHORUS_AUTOTUNE='yes'"); }),
            "-x CHORUS_AUTOTUNE='yes' is invalid: expected 0 or 1");
  EXPECT_EQ(error_of([] {
              check_runtime_variable("CHORUS_AUTOTUNE_SAMPLES", "0", "-x CHORUS_AUTOTUNE_SAMPLES='0'");
            }),
            "-x CHORUS_AUTOTUNE_SAMPLES='0' is invalid: expected an integer number of samples in [1, 1000]");
  EXPECT_THAT(launch_usage(), HasSubstr("--autotune"));
  EXPECT_THAT(launch_usage(), HasSubstr("--shm-allreduce-threshold"));
}

TEST(RuntimeSettings, EnvironmentValuesAreCheckedLikeInit) {
  EXPECT_NO_THROW(check_runtime_variable("CHORUS_CYCLE_TIME_MS", "5", "x"));
  EXPECT_NO_THROW(check_runtime_variable("CHORUS_SOMETHING_ELSE", "anything", "x"));
  EXPECT_EQ(error_of([] { check_runtime_variable("CHORUS_CACHE_CAPACITY", "-1", "-x CHORUS_CACHE_CAPACITY='-1'"); }),
            "-x CHORUS_CACHE_CAPACITY='-1' is invalid: expected an integer number of entries in [0, 1000000]");
}

}  // namespace
}  // namespace chorus::launcher
