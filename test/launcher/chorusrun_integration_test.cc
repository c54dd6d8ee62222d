// chorusrun end to end on this machine: real mpirun, real ranks of
// launcher_test_program, real signals. Each case asserts chorusrun's exit
// status, its final line, and that no process of the job is left.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <filesystem>

#include "chorusrun_run.h"

namespace chorus::launcher::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::string kChorusrun = CHORUSRUN_PATH;
const std::string kProgram = LAUNCHER_TEST_PROGRAM_PATH;

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {0};
  gethostname(name, HOST_NAME_MAX);
  return name;
}

// chorusrun HEAD... launcher_test_program PROGRAM_ARGS...
RunRequest args(std::initializer_list<std::string> head, std::initializer_list<std::string> program) {
  RunRequest request;
  request.args = head;
  request.args.push_back(kProgram);
  request.args.insert(request.args.end(), program);
  return request;
}

TEST(Chorusrun, SuccessfulRunTagsEveryRanksLinesAndExitsZero) {
  const int np = 3;
  const RunResult r = run_chorusrun(kChorusrun, args({"-np", std::to_string(np)}, {"allreduce"}));
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code(), 0) << r.output;
  // Reference: 1 + 2 + ... + np, computed here.
  const int expected = np * (np + 1) / 2;
  for (int rank = 0; rank < np; ++rank) {
    const std::string tag = "[" + std::to_string(rank) + "] ";
    EXPECT_THAT(lines_starting_with(r.output, tag),
                ElementsAre(tag + "rank " + std::to_string(rank) + " of " + std::to_string(np) + " on " + host_name() + ": allreduce sum " +
                            std::to_string(expected)))
        << r.output;
  }
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const auto notices = lines_starting_with(r.output, "chorusrun: 3 ranks on");
  EXPECT_EQ(notices.size(), cores < np ? 1u : 0u) << r.output;
  EXPECT_THAT(r.leftovers, IsEmpty());
}

TEST(Chorusrun, NoTagOutputLeavesLinesAlone) {
  const RunResult r = run_chorusrun(kChorusrun, args({"-np", "2", "--no-tag-output"}, {"allreduce"}));
  EXPECT_EQ(r.exit_code(), 0) << r.output;
  EXPECT_EQ(lines_starting_with(r.output, "rank ").size(), 2u) << r.output;
  EXPECT_THAT(lines_starting_with(r.output, "["), IsEmpty()) << r.output;
}

TEST(Chorusrun, RankExitingWithThreeIsNamedAndItsCodeReturned) {
  const RunResult r = run_chorusrun(kChorusrun, args({"-np", "2"}, {"exit", "1", "3"}));
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code(), 3) << r.output;
  EXPECT_EQ(last_line(r.output), "chorusrun: rank 1 (on " + host_name() + ") exited with code 3") << r.output;
  EXPECT_THAT(r.leftovers, IsEmpty());
}

TEST(Chorusrun, RankKilledBySigkillIsNamedWithTheSignal) {
  const RunResult r = run_chorusrun(kChorusrun, args({"-np", "2"}, {"kill", "0"}));
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code(), 128 + SIGKILL) << r.output;
  EXPECT_EQ(last_line(r.output), "chorusrun: rank 0 (on " + host_name() + ") was killed by signal 9 (SIGKILL)")
      << r.output;
  EXPECT_THAT(r.leftovers, IsEmpty());
}

TEST(Chorusrun, StartTimeoutNamesTheRankThatNeverCalledInit) {
  const RunResult r = run_chorusrun(kChorusrun, args({"-np", "2", "--start-timeout", "3"}, {"no-init", "1"}));
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code(), 124) << r.output;
  EXPECT_EQ(last_line(r.output),
            "chorusrun: start timeout: rank(s) [1] did not reach chorus::init() within 3 s (rank(s) [0] did); the "
            "job was stopped")
      << r.output;
  EXPECT_THAT(r.leftovers, IsEmpty());
}

class ReadyDirectory {
 public:
  ReadyDirectory() {
    char pattern[] = "/tmp/chorusrun-test-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~ReadyDirectory() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  bool all_ready(int np) const {
    for (int r = 0; r < np; ++r) {
      if (!std::filesystem::exists(path_ + "/ready." + std::to_string(r))) return false;
    }
    return true;
  }

 private:
  std::string path_;
};

// A survivor that saw a rank die ends the job with the runtime's abort
// code, and its exit often reaches chorusrun before the dead rank's:
// chorusrun must still name the rank that was killed.
TEST(Chorusrun, KilledRankIsNamedEvenWhenASurvivorsAbortArrivesFirst) {
  ReadyDirectory directory;
  const RunResult r = run_chorusrun(kChorusrun, args({"-np", "3"}, {"abort-after-kill", "2", directory.path()}));
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code(), 128 + SIGKILL) << r.output;
  EXPECT_EQ(last_line(r.output), "chorusrun: rank 2 (on " + host_name() + ") was killed by signal 9 (SIGKILL)")
      << r.output;
  EXPECT_THAT(r.leftovers, IsEmpty());
}

TEST(Chorusrun, SigtermToTheLauncherEndsEveryRank) {
  ReadyDirectory ready;
  RunRequest request = args({"-np", "2"}, {"wait", ready.path()});
  request.signal_when = [&] { return ready.all_ready(2); };
  request.signal = SIGTERM;
  const RunResult r = run_chorusrun(kChorusrun, request);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_TRUE(ready.all_ready(2)) << r.output;
  EXPECT_EQ(r.exit_code(), 128 + SIGTERM) << r.output;
  EXPECT_EQ(last_line(r.output), "chorusrun: stopped by SIGTERM; every rank was ended") << r.output;
  // The scan that finds leftovers did see the job: chorusrun, mpirun, two
  // rank wrappers and two ranks.
  EXPECT_EQ(r.alive_at_signal, 6u) << r.output;
  EXPECT_THAT(r.leftovers, IsEmpty());
}

TEST(Chorusrun, CtrlCToTheWholeProcessGroupEndsEveryRank) {
  ReadyDirectory ready;
  RunRequest request = args({"-np", "2"}, {"wait", ready.path()});
  request.signal_when = [&] { return ready.all_ready(2); };
  request.signal = SIGINT;
  request.signal_process_group = true;
  const RunResult r = run_chorusrun(kChorusrun, request);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code(), 128 + SIGINT) << r.output;
  EXPECT_EQ(last_line(r.output), "chorusrun: stopped by SIGINT; every rank was ended") << r.output;
  EXPECT_THAT(r.leftovers, IsEmpty());
}

TEST(Chorusrun, BadInputExitsTwoBeforeStartingAnything) {
  const RunResult r = run_chorusrun(kChorusrun, args({"-np", "2", "-H", "localhost:0"}, {"allreduce"}));
  EXPECT_EQ(r.exit_code(), 2);
  EXPECT_EQ(last_line(r.output),
            "chorusrun: error: -H entry 'localhost:0': slots must be a positive integer, got '0'");
}

TEST(Chorusrun, DryRunPrintsTheCommandAndVerboseRunsIt) {
  const RunResult dry = run_chorusrun(kChorusrun, args({"-np", "2", "--dry-run", "--cycle-time-ms", "3"}, {"allreduce"}));
  EXPECT_EQ(dry.exit_code(), 0);
  EXPECT_THAT(dry.output, HasSubstr("CHORUS_CYCLE_TIME_MS=3 mpirun "));
  EXPECT_THAT(dry.output, HasSubstr(" -x CHORUS_CYCLE_TIME_MS "));
  EXPECT_THAT(dry.output, HasSubstr("--chorus-rank-wrapper 127.0.0.1:"));
  EXPECT_THAT(lines_starting_with(dry.output, "[0]"), IsEmpty()) << "dry run must not run anything";

  const RunResult verbose = run_chorusrun(kChorusrun, args({"-np", "2", "--verbose"}, {"allreduce"}));
  EXPECT_EQ(verbose.exit_code(), 0) << verbose.output;
  EXPECT_EQ(lines_starting_with(verbose.output, "chorusrun: running mpirun ").size(), 1u) << verbose.output;
  EXPECT_EQ(lines_starting_with(verbose.output, "[1] rank 1 of 2 on " + host_name() + ": allreduce sum 3").size(), 1u) << verbose.output;
}

}  // namespace
}  // namespace chorus::launcher::testing
