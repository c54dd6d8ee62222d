// chorusrun's rank wrapper under a stand-in for the host's launcher daemon
// (fake_launcher_daemon), over a real report listener: how it reports a
// program it stopped. A daemon that dies makes the rank "orphaned" (its host
// is lost, and chorusrun --elastic restarts without it); a daemon that stops
// its ranks makes it "stopped" (a consequence of another rank's end).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "process/process_util.h"
#include "reports/report_listener.h"
#include "reports/report_protocol.h"
#include "running/rank_wrapper.h"

namespace chorus::launcher {
namespace {

// Sets its trap, says so in the file "$1", then ends 1 s after a SIGTERM:
// long after the daemon of the `dies` mode is gone.
constexpr const char* kSlowToStop =
    "trap 'sleep 1; exit 0' TERM; : > \"$1\"; while :; do sleep 0.1; done";

std::string temporary_directory() {
  std::string pattern = ::testing::TempDir() + "rank_wrapper_test.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

// Runs the wrapper (and kSlowToStop under it) from the daemon in `mode`,
// signals the daemon once the program is ready, and returns the wrapper's
// exit report; nullopt (with a test failure) when none came within 20 s.
std::optional<RankExit> exit_report_under(const std::string& mode) {
  ReportListener listener;
  const std::string token = "rank-wrapper-test";
  const std::string directory = temporary_directory();
  const std::string ready = directory + "/ready";
  Command command;
  command.argv = {FAKE_LAUNCHER_DAEMON_PATH, mode, "--", CHORUSRUN_PATH, kRankWrapperFlag,
                  "127.0.0.1:" + std::to_string(listener.port()), token, "--no-tag", "--",
                  "/bin/sh", "-c", kSlowToStop, "sh", ready};
  command.environment = {{"OMPI_COMM_WORLD_RANK", "0"}};
  std::string error;
  const pid_t daemon = spawn_process(command, SpawnOptions{}, &error);
  if (daemon < 0) {
    ADD_FAILURE() << "cannot start fake_launcher_daemon: " << error;
    return std::nullopt;
  }
  bool hello = false, signaled = false;
  std::optional<RankExit> exit;
  ReportListener::Events events;
  events.on_message = [&](const ReportMessage& message) {
    if (message.kind == ReportMessage::Kind::kHello) hello = true;
    if (message.kind == ReportMessage::Kind::kExit) exit = message.exit;
  };
  events.on_closed = [](int) {};
  const double deadline = monotonic_seconds() + 20.0;
  while (!exit && monotonic_seconds() < deadline) {
    if (hello && !signaled && access(ready.c_str(), F_OK) == 0) {
      kill(daemon, SIGUSR1);
      signaled = true;
    }
    std::vector<pollfd> fds;
    listener.add_poll_fds(&fds);
    poll(fds.data(), fds.size(), 100);
    listener.handle(fds, token, events);
  }
  if (!exit) {
    ADD_FAILURE() << "no exit report within 20 s (hello " << hello << ", daemon signaled " << signaled << ")";
    kill(daemon, SIGKILL);
  }
  int status = 0;
  waitpid(daemon, &status, 0);
  unlink(ready.c_str());
  rmdir(directory.c_str());
  return exit;
}

// orted starts the wrappers from one of its threads, and PR_SET_PDEATHSIG
// fires when that thread ends, which in a daemon being killed can come
// before the process is gone: the wrapper stops the program while its
// parent still seems alive, and must still report the rank orphaned.
TEST(RankWrapper, DaemonKilledWhileTheProgramStopsIsAnOrphan) {
  const std::optional<RankExit> exit = exit_report_under("dies");
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->rank, 0);
  EXPECT_TRUE(exit->orphaned);
  EXPECT_FALSE(exit->stopped);
  EXPECT_FALSE(exit->signaled);
  EXPECT_EQ(exit->value, 0);  // the program's trap ran: it was stopped with SIGTERM
}

TEST(RankWrapper, DaemonStoppingItsRanksIsAStop) {
  const std::optional<RankExit> exit = exit_report_under("stops");
  ASSERT_TRUE(exit);
  EXPECT_EQ(exit->rank, 0);
  EXPECT_TRUE(exit->stopped);
  EXPECT_FALSE(exit->orphaned);
  EXPECT_EQ(exit->value, 0);
}

}  // namespace
}  // namespace chorus::launcher
