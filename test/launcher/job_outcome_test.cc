#include "running/job_outcome.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "base/launcher_rendezvous.h"
#include "options/usage_error.h"
#include "plan/mpi_implementation.h"
#include "reports/report_protocol.h"
#include "running/line_prefixer.h"
#include "support/chorus_error_of.h"

namespace chorus::launcher {
namespace {

// The message of the UsageError a call throws.
constexpr auto error_of = chorus_test::error_of<UsageError>;

RankExit code(int rank, int value, bool stopped = false) {
  RankExit e;
  e.rank = rank;
  e.value = value;
  e.stopped = stopped;
  e.host = "h" + std::to_string(rank);
  return e;
}

RankExit killed(int rank, int sig, bool stopped = false) {
  RankExit e = code(rank, sig, stopped);
  e.signaled = true;
  return e;
}

JobRecord started(int np) {
  JobRecord r;
  r.np = np;
  for (int i = 0; i < np; ++i) r.started.insert(i);
  return r;
}

TEST(JobOutcome, SuccessOnlyWhenEveryRankAndTheLauncherExitZero) {
  JobRecord r = started(2);
  r.exits = {code(1, 0), code(0, 0)};
  const JobOutcome ok = decide_outcome(r);
  EXPECT_EQ(ok.exit_status, 0);
  EXPECT_EQ(ok.final_line, "");
  r.launcher_status = 1;
  const JobOutcome bad = decide_outcome(r);
  EXPECT_EQ(bad.exit_status, 1);
  EXPECT_EQ(bad.final_line, "chorusrun: mpirun exited with code 1 although every rank exited 0");
}

TEST(JobOutcome, FirstRankThatFailedOnItsOwnIsNamed) {
  JobRecord r = started(3);
  r.launcher_status = 3;
  // Rank 0's report arrives first, but its wrapper had been told to stop it.
  r.exits = {killed(0, SIGTERM, true), code(2, 3), killed(1, SIGKILL)};
  const JobOutcome o = decide_outcome(r);
  EXPECT_EQ(o.exit_status, 3);
  EXPECT_EQ(o.final_line, "chorusrun: rank 2 (on h2) exited with code 3");
}

TEST(JobOutcome, SignalsAreNamedAndGive128PlusSignal) {
  JobRecord r = started(2);
  r.exits = {killed(1, SIGKILL), killed(0, SIGTERM, true)};
  const JobOutcome o = decide_outcome(r);
  EXPECT_EQ(o.exit_status, 137);
  EXPECT_EQ(o.final_line, "chorusrun: rank 1 (on h1) was killed by signal 9 (SIGKILL)");
}

// Survivors whose runtime saw a rank die end the job with its abort code
// (kJobAbortExitCode), often before the dead rank's report arrives: the
// cause is chosen by what each exit is, whatever the order of arrival.
TEST(JobOutcome, KilledRankOutranksSurvivorsAbortsThatArrivedFirst) {
  for (const bool reported : {false, true}) {
    JobRecord r = started(3);
    r.launcher_status = kJobAbortExitCode;
    r.exits = {code(0, kJobAbortExitCode), code(1, kJobAbortExitCode), killed(2, SIGKILL)};
    if (reported) r.lost_reports = {LostReport{0, 2, "h2"}, LostReport{1, 2, "h2"}};
    const JobOutcome o = decide_outcome(r);
    EXPECT_EQ(o.exit_status, 137) << reported;
    EXPECT_EQ(o.final_line, "chorusrun: rank 2 (on h2) was killed by signal 9 (SIGKILL)") << reported;
  }
}

TEST(JobOutcome, RankSurvivorsReportedLostIsTheCause) {
  // A survivor's program failed on the runtime's error (code 1) before the
  // lost rank's own report: the survivors' word names the cause.
  JobRecord r = started(3);
  r.exits = {code(0, 1), code(2, 3), code(1, kJobAbortExitCode)};
  r.lost_reports = {LostReport{1, 2, "h2"}};
  EXPECT_EQ(decide_outcome(r).final_line, "chorusrun: rank 2 (on h2) exited with code 3");
}

TEST(JobOutcome, VanishedRankOutranksSurvivorsAborts) {
  // The killed rank's wrapper was lost too: its rank is named, not the
  // survivor that aborted the job because of it.
  JobRecord r = started(3);
  r.launcher_status = kJobAbortExitCode;
  r.exits = {code(0, kJobAbortExitCode), killed(1, SIGTERM, true)};
  EXPECT_EQ(decide_outcome(r).final_line,
            "chorusrun: rank(s) [2] ended without reporting how (their host or their chorusrun rank wrapper was "
            "lost); mpirun exited with code 70");
  // With nothing else to blame, the rank whose runtime ended the job is named
  // (its own internal error, say).
  JobRecord alone = started(2);
  alone.exits = {code(1, kJobAbortExitCode), killed(0, SIGTERM, true)};
  EXPECT_EQ(decide_outcome(alone).exit_status, kJobAbortExitCode);
  EXPECT_EQ(decide_outcome(alone).final_line, "chorusrun: rank 1 (on h1) exited with code 70");
}

TEST(JobOutcome, StartTimeoutNamesTheMissingRanks) {
  JobRecord r = started(4);
  r.initialized = {0, 2};
  r.start_timeout_seconds = 2.5;
  r.exits = {killed(1, SIGTERM, true)};
  const JobOutcome o = decide_outcome(r);
  EXPECT_EQ(o.exit_status, kStartTimeoutExitStatus);
  EXPECT_EQ(o.final_line,
            "chorusrun: start timeout: rank(s) [1, 3] did not reach chorus::init() within 2.5 s (rank(s) [0, 2] did); "
            "the job was stopped");
}

TEST(JobOutcome, StopBySignal) {
  JobRecord r = started(2);
  r.stopped_by_signal = SIGTERM;
  r.exits = {killed(0, SIGTERM, true), killed(1, SIGTERM, true)};
  const JobOutcome o = decide_outcome(r);
  EXPECT_EQ(o.exit_status, 143);
  EXPECT_EQ(o.final_line, "chorusrun: stopped by SIGTERM; every rank was ended");
}

TEST(JobOutcome, LostAndNeverStartedRanks) {
  JobRecord r = started(3);
  r.exits = {code(0, 0), killed(2, SIGTERM, true)};
  r.lost = {1};
  r.launcher_status = 1;
  EXPECT_EQ(decide_outcome(r).final_line,
            "chorusrun: rank(s) [1] ended without reporting how (their host or their chorusrun rank wrapper was "
            "lost); mpirun exited with code 1");
  // A rank that said hello but whose connection is still open (a cut
  // link) counts the same.
  JobRecord cut = started(2);
  cut.exits = {killed(0, SIGTERM, true)};
  cut.launcher_status = 213;
  EXPECT_EQ(decide_outcome(cut).exit_status, 213);
  EXPECT_EQ(decide_outcome(cut).final_line,
            "chorusrun: rank(s) [1] ended without reporting how (their host or their chorusrun rank wrapper was "
            "lost); mpirun exited with code 213");

  JobRecord never;
  never.np = 2;
  never.launcher = "srun";
  never.launcher_status = 1;
  const JobOutcome o = decide_outcome(never);
  EXPECT_EQ(o.exit_status, 1);
  EXPECT_EQ(o.final_line, "chorusrun: srun exited with code 1; rank(s) [0, 1] never started");
}

TEST(ReportProtocol, RoundTripsEveryMessage) {
  auto hello = parse_report(format_hello("t0k", 3, 1234, "node7"));
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->kind, ReportMessage::Kind::kHello);
  EXPECT_EQ(hello->token, "t0k");
  EXPECT_EQ(hello->rank, 3);
  EXPECT_EQ(hello->pid, 1234);
  EXPECT_EQ(hello->host, "node7");

  RankExit e = killed(5, SIGKILL, true);
  e.seconds = 1.25;
  auto exit = parse_report(format_exit("t0k", e));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->kind, ReportMessage::Kind::kExit);
  EXPECT_EQ(exit->exit.rank, 5);
  EXPECT_TRUE(exit->exit.signaled);
  EXPECT_EQ(exit->exit.value, SIGKILL);
  EXPECT_DOUBLE_EQ(exit->exit.seconds, 1.25);
  EXPECT_TRUE(exit->exit.stopped);
  EXPECT_FALSE(exit->exit.orphaned);

  // A wrapper whose parent (slurmstepd, orted) died stopped its program:
  // an orphan, not a rank told to stop.
  e.stopped = false;
  e.orphaned = true;
  EXPECT_EQ(format_exit("t0k", e), "exit t0k 5 signal 9 1.250 2\n");
  exit = parse_report(format_exit("t0k", e));
  ASSERT_TRUE(exit.has_value());
  EXPECT_FALSE(exit->exit.stopped);
  EXPECT_TRUE(exit->exit.orphaned);
  EXPECT_FALSE(parse_report("exit t0k 5 signal 9 1.250 3").has_value());

  auto init = parse_report("init t0k 2");
  ASSERT_TRUE(init.has_value());
  EXPECT_EQ(init->kind, ReportMessage::Kind::kInit);
  EXPECT_EQ(init->rank, 2);

  EXPECT_FALSE(parse_report("GET / HTTP/1.1").has_value());
  EXPECT_FALSE(parse_report("init t0k -1").has_value());
  EXPECT_FALSE(parse_report("exit t0k 1 maybe 3 0.1 0").has_value());
  EXPECT_FALSE(parse_report("init t0k 2 extra").has_value());
}

TEST(ReportProtocol, SignalNames) {
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
}

TEST(LinePrefixer, PrefixesWholeLinesAndKeepsPartialOnes) {
  LinePrefixer p("[1] ");
  EXPECT_EQ(p.feed("a\nb"), "[1] a\n");
  EXPECT_EQ(p.feed("c\n\nd"), "[1] bc\n[1] \n");
  EXPECT_EQ(p.flush(), "[1] d\n");
  EXPECT_EQ(p.flush(), "");
  const std::string long_line(LinePrefixer::kMaxPending + 10, 'x');
  EXPECT_EQ(p.feed(long_line), "[1] " + long_line + "\n");
}

TEST(MpiImplementation, OpenMpiIsRecognisedOthersAreRefused) {
  const MpiImplementation mpi = identify_mpi("mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/\n");
  EXPECT_EQ(mpi.name, "Open MPI");
  EXPECT_EQ(mpi.version, "4.1.4");
  EXPECT_EQ(error_of([] { identify_mpi("HYDRA build details:\n    Version: 4.0.2\n"); }),
            "mpirun is MPICH (Hydra) ('mpirun --version' printed 'HYDRA build details:'): chorusrun supports Open "
            "MPI's mpirun; put Open MPI's mpirun first on PATH, or use --launcher srun inside a Slurm allocation");
  EXPECT_EQ(error_of([] { identify_mpi("Intel(R) MPI Library for Linux* OS, Version 2021.6\n"); }),
            "mpirun is Intel MPI ('mpirun --version' printed 'Intel(R) MPI Library for Linux* OS, Version 2021.6'): "
            "chorusrun supports Open MPI's mpirun; put Open MPI's mpirun first on PATH, or use --launcher srun inside "
            "a Slurm allocation");
  EXPECT_EQ(error_of([] { identify_mpi("something else"); }).substr(0, 27), "mpirun is an unknown MPI ('");
}

}  // namespace
}  // namespace chorus::launcher
