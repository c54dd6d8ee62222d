// chorusrun --elastic's pure parts: the options and how they are checked,
// the discovery script's output, placing ranks on the usable hosts, and how
// an attempt's end is judged (restart, grow, stop). The discovery script
// itself is run for real (scripts written to a temporary folder).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/elastic.h"
#include "elastic/elastic_policy.h"
#include "elastic/host_discovery.h"
#include "options/launch_options.h"
#include "options/usage_error.h"
#include "reports/report_protocol.h"
#include "support/chorus_error_of.h"

namespace chorus::launcher {
namespace {

// The message of the UsageError a call throws.
constexpr auto error_of = chorus_test::error_of<UsageError>;

using Strings = std::vector<std::string>;
using ::testing::HasSubstr;

LaunchOptions parse(const Strings& args) { return parse_launch_options(args); }

TEST(ElasticOptions, ParsesTheElasticFlags) {
  const LaunchOptions o = parse({"--elastic", "--min-np", "2", "--max-np", "6", "--host-discovery-script", "/bin/d",
                                 "--discovery-interval", "0.5", "--host-cooldown", "3", "--max-restarts", "0", "prog"});
  EXPECT_TRUE(o.elastic.enabled);
  EXPECT_EQ(o.elastic.min_np, 2);
  EXPECT_EQ(o.elastic.max_np, 6);
  EXPECT_EQ(o.elastic.discovery_script, "/bin/d");
  EXPECT_DOUBLE_EQ(o.elastic.discovery_interval_seconds, 0.5);
  EXPECT_DOUBLE_EQ(o.elastic.host_cooldown_seconds, 3);
  EXPECT_EQ(o.elastic.max_restarts, 0);
  EXPECT_EQ(o.program, Strings{"prog"});

  const LaunchOptions defaults = parse({"--elastic", "-H", "a:2,b:2", "prog"});
  EXPECT_EQ(defaults.elastic.min_np, 1);
  EXPECT_FALSE(defaults.elastic.max_np.has_value());
  EXPECT_FALSE(parse({"-np", "2", "prog"}).elastic.enabled);
}

TEST(ElasticOptions, BadSettingsAreClearErrors) {
  EXPECT_EQ(error_of([] { parse({"--elastic", "--min-np", "4", "--max-np", "2", "prog"}); }),
            "--min-np 4 is above --max-np 2: expected --min-np <= --max-np");
  EXPECT_EQ(error_of([] { parse({"--elastic", "--min-np", "0", "prog"}); }),
            "--min-np='0' is invalid: expected a positive integer");
  EXPECT_EQ(error_of([] { parse({"--elastic", "--max-np", "-1", "prog"}); }),
            "--max-np='-1' is invalid: expected a positive integer");
  EXPECT_EQ(error_of([] { parse({"--min-np", "2", "prog"}); }),
            "--min-np was given without --elastic: expected both (it only applies to elastic jobs)");
  EXPECT_EQ(error_of([] { parse({"--host-discovery-script", "/bin/d", "prog"}); }),
            "--host-discovery-script was given without --elastic: expected both (it only applies to elastic jobs)");
  EXPECT_EQ(error_of([] { parse({"--elastic", "-H", "a", "--host-discovery-script", "/bin/d", "prog"}); }),
            "--host-discovery-script was given with -H or --hostfile: expected one source of hosts");
  EXPECT_EQ(error_of([] { parse({"--elastic", "--launcher", "srun", "--host-discovery-script", "/bin/d", "prog"}); }),
            "--host-discovery-script cannot be used with --launcher srun: srun places ranks in the Slurm allocation; "
            "use --launcher mpirun");
  EXPECT_EQ(error_of([] { parse({"--elastic", "--min-np", "2", "--max-np", "3", "-np", "4", "prog"}); }),
            "-np 4 is outside --min-np 2 .. --max-np 3: with --elastic, -np is the number of ranks to start with");
  EXPECT_EQ(error_of([] { parse({"--elastic", "--discovery-interval", "0", "prog"}); }),
            "--discovery-interval='0' is invalid: expected a number of seconds in (0, 86400]");
  EXPECT_EQ(error_of([] { parse({"--elastic", "--max-restarts", "x", "prog"}); }),
            "--max-restarts='x' is invalid: expected an integer >= 0");
}

TEST(HostDiscovery, ParsesHostAndSlotsLines) {
  const std::vector<Host> hosts = parse_discovered_hosts("# hosts now\nnode1:2\n\n  node2  \n10.0.0.3:4 # gpu\n", "d.sh");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "node1");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].name, "node2");
  EXPECT_EQ(hosts[1].slots, 1);
  EXPECT_EQ(hosts[2].name, "10.0.0.3");
  EXPECT_EQ(hosts[2].slots, 4);
  EXPECT_TRUE(parse_discovered_hosts("", "d.sh").empty());  // no host available now
}

TEST(HostDiscovery, GarbageIsAnErrorNamingTheLine) {
  const std::string expected = ": expected 'host' or 'host:slots' (slots a positive integer), one host a line";
  EXPECT_EQ(error_of([&] { parse_discovered_hosts("node1:2\nnode2:zero\n", "d.sh"); }),
            "host discovery script d.sh line 2 'node2:zero'" + expected);
  EXPECT_EQ(error_of([&] { parse_discovered_hosts("node1 slots=2\n", "d.sh"); }),
            "host discovery script d.sh line 1 'node1 slots=2'" + expected);
  EXPECT_EQ(error_of([&] { parse_discovered_hosts("a:0\n", "d.sh"); }),
            "host discovery script d.sh line 1 'a:0'" + expected);
  EXPECT_THAT(error_of([&] { parse_discovered_hosts("a\nb\na:2\n", "d.sh"); }), HasSubstr("host 'a' is listed twice"));
}

class DiscoveryScript : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/chorus-discovery-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& write(const std::string& body) {
    path_ = dir_ + "/discover.sh";
    std::ofstream(path_) << "#!/bin/sh\n" << body;
    chmod(path_.c_str(), 0755);
    return path_;
  }
  std::string dir_, path_;
};

TEST_F(DiscoveryScript, RunsTheScript) {
  const std::vector<Host> hosts = run_discovery_script(write("echo a:2; echo b; echo warning >&2\n"));
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].name, "a");
  EXPECT_EQ(hosts[1].slots, 1);
}

TEST_F(DiscoveryScript, AFailingScriptIsAnError) {
  const std::string& script = write("echo 'cannot reach the scheduler'; exit 3\n");
  EXPECT_EQ(error_of([&] { run_discovery_script(script); }),
            "host discovery script " + script +
                " failed with exit code 3: cannot reach the scheduler (expected exit code 0 and 'host[:slots]' lines)");
  EXPECT_EQ(error_of([&] { run_discovery_script(dir_ + "/missing.sh"); }),
            "host discovery script " + dir_ + "/missing.sh cannot be run: No such file or directory (expected an "
            "executable file)");
  const std::string& slow = write("sleep 30\n");
  EXPECT_EQ(error_of([&] { run_discovery_script(slow, 0.3); }),
            "host discovery script " + slow + " did not finish within 0.3 s: expected it to print the hosts and exit");
}

std::vector<Host> hosts(const std::string& list) {
  std::vector<Host> out;
  std::stringstream stream(list);
  std::string entry;
  while (std::getline(stream, entry, ',')) {
    const size_t colon = entry.find(':');
    out.push_back(Host{entry.substr(0, colon), std::stoi(entry.substr(colon + 1)), entry});
  }
  return out;
}

TEST(Placement, FillsUsableHostsUpToTheLimit) {
  HostBlacklist none;
  Placement p = place_ranks(hosts("a:2,b:2,c:2"), none, 0, std::nullopt, std::nullopt);
  EXPECT_EQ(p.np, 6);
  EXPECT_EQ(format_host_list(p.hosts), "a:2,b:2,c:2");
  p = place_ranks(hosts("a:2,b:2,c:2"), none, 0, std::nullopt, 3);
  EXPECT_EQ(p.np, 3);
  EXPECT_EQ(format_host_list(p.hosts), "a:2,b:1");
  EXPECT_EQ(p.available_slots, 6);
  p = place_ranks(hosts("a:2,b:2"), none, 0, 1, 3);  // -np 1 to start with
  EXPECT_EQ(format_host_list(p.hosts), "a:1");

  HostBlacklist blacklist;
  blacklist.add("b", 10.0);
  p = place_ranks(hosts("a:1,b:1,c:1"), blacklist, 5.0, std::nullopt, std::nullopt);
  EXPECT_EQ(format_host_list(p.hosts), "a:1,c:1");
  EXPECT_EQ(blacklist.excluded(5.0), std::set<std::string>{"b"});
  // After the cooldown the host is usable again (if the source lists it).
  p = place_ranks(hosts("a:1,b:1,c:1"), blacklist, 10.0, std::nullopt, std::nullopt);
  EXPECT_EQ(p.np, 3);
  blacklist.add("c", std::numeric_limits<double>::infinity());
  EXPECT_EQ(place_ranks(hosts("a:1,b:1,c:1"), blacklist, 1e9, std::nullopt, std::nullopt).np, 2);
}

TEST(Placement, RanksFollowTheSlotOrder) {
  EXPECT_EQ(hosts_by_slot(hosts("a:2,b:1"), 3), (Strings{"a", "a", "b"}));
  EXPECT_EQ(hosts_by_slot(hosts("a:1,b:1,c:1"), 2), (Strings{"a", "b"}));
}

RankExit exit_of(int rank, int value, bool signaled = false, bool stopped = false) {
  RankExit e;
  e.rank = rank;
  e.value = value;
  e.signaled = signaled;
  e.stopped = stopped;
  return e;
}

JobRecord record_of(int np, std::vector<RankExit> exits) {
  JobRecord r;
  r.np = np;
  for (int i = 0; i < np; ++i) r.started.insert(i);
  r.exits = std::move(exits);
  return r;
}

const Strings kHosts{"h1", "h2", "h3"};

TEST(JudgeAttempt, Success) {
  const AttemptVerdict v = judge_attempt(record_of(3, {exit_of(0, 0), exit_of(1, 0), exit_of(2, 0)}), kHosts);
  EXPECT_EQ(v.end, AttemptEnd::kSucceeded);
}

TEST(JudgeAttempt, AHostWhoseRanksVanishedFailed) {
  // Every process of h3 was killed: its wrapper never reported; the others
  // were stopped by mpirun (or failed naming the lost peer).
  JobRecord r = record_of(3, {exit_of(0, 1), exit_of(1, 15, true, true)});
  r.lost = {2};
  r.launcher_status = 1;
  AttemptVerdict v = judge_attempt(r, kHosts);
  EXPECT_EQ(v.end, AttemptEnd::kHostFailure);
  EXPECT_EQ(v.failed_hosts, std::set<std::string>{"h3"});

  // A rank killed by a signal it was not told to stop with.
  v = judge_attempt(record_of(3, {exit_of(1, 9, true), exit_of(0, 15, true, true), exit_of(2, 15, true, true)}), kHosts);
  EXPECT_EQ(v.end, AttemptEnd::kHostFailure);
  EXPECT_EQ(v.failed_hosts, std::set<std::string>{"h2"});

  // Started, never said how it ended (a cut link closes nothing).
  r = record_of(3, {exit_of(0, 1), exit_of(1, 1)});
  v = judge_attempt(r, kHosts);
  EXPECT_EQ(v.failed_hosts, std::set<std::string>{"h3"});

  // Ranks that never started while others did: their host could not run them.
  r = record_of(3, {exit_of(0, 15, true, true), exit_of(1, 15, true, true)});
  r.started = {0, 1};
  v = judge_attempt(r, kHosts);
  EXPECT_EQ(v.failed_hosts, std::set<std::string>{"h3"});
}

// A whole Slurm node lost (its slurmd and slurmstepd killed): its wrappers
// see their parent die and report it; the survivors' heartbeat aborts the
// step and srun SIGKILLs their wrappers, which then vanish without a report
// too. Only the orphans' host is blamed (seen on the suite's cluster, where
// blaming both left no node to restart on).
TEST(JudgeAttempt, AHostWhoseLauncherDaemonDiedIsBlamedNotTheRanksTheAbortKilled) {
  RankExit orphan = exit_of(2, 15, true);
  orphan.orphaned = true;
  RankExit other = exit_of(3, 143);
  other.orphaned = true;
  JobRecord r = record_of(4, {orphan, other});
  r.lost = {0, 1};
  r.launcher_status = 70;
  const Strings hosts{"n1", "n1", "n2", "n2"};
  AttemptVerdict v = judge_attempt(r, hosts);
  EXPECT_EQ(v.end, AttemptEnd::kHostFailure);
  EXPECT_EQ(v.failed_hosts, std::set<std::string>{"n2"});
  // Without orphans the vanished ranks are the suspects, as before.
  r.exits = {exit_of(0, 15, true, true), exit_of(1, 15, true, true)};
  r.lost = {2, 3};
  v = judge_attempt(r, hosts);
  EXPECT_EQ(v.failed_hosts, std::set<std::string>{"n2"});
}

// A whole host lost at once (its slurmd/slurmstepd or orted died with its
// ranks, or it froze): the survivors' heartbeat reports the lost rank, then
// its abort makes the launcher SIGKILL every wrapper, so every rank vanished
// without a report. Only the host the survivors named is blamed.
TEST(JudgeAttempt, TheHostSurvivorsNamedLostIsBlamedWhenEveryRankVanished) {
  JobRecord r = record_of(4, {});
  r.lost = {0, 1, 2, 3};
  r.launcher_status = 137;
  r.lost_reports = {{0, 2, "n2"}, {1, 2, "n2"}, {0, 3, "n2"}};
  const Strings hosts{"n1", "n1", "n2", "n2"};
  AttemptVerdict v = judge_attempt(r, hosts);
  EXPECT_EQ(v.end, AttemptEnd::kHostFailure);
  EXPECT_EQ(v.failed_hosts, std::set<std::string>{"n2"});
  // The placement's name wins over the reporter's (mpirun's host list names
  // hosts by address; the runtime by host name) ...
  r.lost_reports = {{0, 2, "node-two"}};
  EXPECT_EQ(judge_attempt(r, hosts).failed_hosts, std::set<std::string>{"n2"});
  // ... and the report's name is used when the placement does not know it.
  EXPECT_EQ(judge_attempt(r, Strings{"n1", "n1", "", ""}).failed_hosts, std::set<std::string>{"node-two"});
  // Survivors stopped by the launcher and the frozen host's ranks never
  // reporting (mpirun, a SIGSTOPped host): the same.
  r = record_of(3, {exit_of(0, 15, true, true), exit_of(1, 15, true, true)});
  r.lost_reports = {{0, 2, "h3"}, {1, 2, "h3"}};
  v = judge_attempt(r, kHosts);
  EXPECT_EQ(v.end, AttemptEnd::kHostFailure);
  EXPECT_EQ(v.failed_hosts, std::set<std::string>{"h3"});
}

// A cut link: each side's heartbeat names a rank on the other side; both
// hosts may be at fault, so both are blamed.
TEST(JudgeAttempt, ConflictingLostReportsBlameEveryHostNamed) {
  JobRecord r = record_of(3, {});
  r.lost = {0, 1, 2};
  r.lost_reports = {{0, 2, "h3"}, {2, 1, "h2"}};
  const AttemptVerdict v = judge_attempt(r, kHosts);
  EXPECT_EQ(v.end, AttemptEnd::kHostFailure);
  EXPECT_EQ(v.failed_hosts, (std::set<std::string>{"h2", "h3"}));
}

TEST(JudgeAttempt, WithoutLostReportsEveryHostWhoseRanksVanishedIsBlamed) {
  JobRecord r = record_of(4, {});
  r.lost = {0, 1, 2, 3};
  const AttemptVerdict v = judge_attempt(r, Strings{"n1", "n1", "n2", "n2"});
  EXPECT_EQ(v.end, AttemptEnd::kHostFailure);
  EXPECT_EQ(v.failed_hosts, (std::set<std::string>{"n1", "n2"}));
}

// A report from an attempt that nonetheless ended well changes nothing.
TEST(JudgeAttempt, LostReportsOfASuccessfulAttemptAreIgnored) {
  JobRecord r = record_of(2, {exit_of(0, 0), exit_of(1, 0)});
  r.lost_reports = {{0, 1, "h2"}};
  EXPECT_EQ(judge_attempt(r, kHosts).end, AttemptEnd::kSucceeded);
}

TEST(JudgeAttempt, RanksAskingToGrowAreNotAFailure) {
  AttemptVerdict v = judge_attempt(record_of(2, {exit_of(0, kElasticRestartExitCode),
                                                 exit_of(1, kElasticRestartExitCode)}), kHosts);
  EXPECT_EQ(v.end, AttemptEnd::kHostsChanged);
  // mpirun may stop the last ones once the first exits non-zero.
  JobRecord r = record_of(2, {exit_of(0, kElasticRestartExitCode), exit_of(1, 15, true, true)});
  r.launcher_status = 75;
  EXPECT_EQ(judge_attempt(r, kHosts).end, AttemptEnd::kHostsChanged);
}

TEST(JudgeAttempt, TheProgramsOwnErrorIsNotRestarted) {
  JobRecord r = record_of(2, {exit_of(1, 2), exit_of(0, 15, true, true)});
  r.launcher_status = 2;
  EXPECT_EQ(judge_attempt(r, kHosts).end, AttemptEnd::kProgramError);
  // Nothing started at all: the launch failed, a restart would too.
  r = record_of(2, {});
  r.started.clear();
  r.launcher_status = 1;
  EXPECT_EQ(judge_attempt(r, kHosts).end, AttemptEnd::kProgramError);
}

TEST(JudgeAttempt, AStopIsAStop) {
  JobRecord r = record_of(2, {exit_of(0, 15, true, true)});
  r.stopped_by_signal = SIGINT;
  r.lost = {1};
  EXPECT_EQ(judge_attempt(r, kHosts).end, AttemptEnd::kStopped);
}

// Failed hosts are left out with srun --exclude, which takes Slurm node
// names; several nodes may share one host name (the suite's virtual nodes).
TEST(ElasticHostName, IsTheSlurmNodeUnderSlurmElseTheHostName) {
  EXPECT_EQ(elastic_host_name("box", "n2"), "n2");
  EXPECT_EQ(elastic_host_name("box", ""), "box");
  EXPECT_EQ(elastic_host_name("box", nullptr), "box");
}

TEST(ReportProtocol, LostLineRoundTrip) {
  const std::string line = format_lost("tok", LostReport{1, 3, "n2"});
  EXPECT_EQ(line, "lost tok 1 3 n2\n");
  const std::optional<ReportMessage> m = parse_report(line.substr(0, line.size() - 1));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->kind, ReportMessage::Kind::kLost);
  EXPECT_EQ(m->token, "tok");
  EXPECT_EQ(m->lost.reporter, 1);
  EXPECT_EQ(m->lost.rank, 3);
  EXPECT_EQ(m->lost.host, "n2");
  EXPECT_FALSE(parse_report("lost tok 1 3").has_value());
  EXPECT_FALSE(parse_report("lost tok 1 -3 n2").has_value());
  EXPECT_FALSE(parse_report("lost tok 1 3 n2 extra").has_value());
}

TEST(ReportProtocol, HostsChangedLine) {
  EXPECT_EQ(format_hosts_changed("abc"), "hosts-changed abc\n");
  EXPECT_TRUE(is_hosts_changed("hosts-changed abc", "abc"));
  EXPECT_FALSE(is_hosts_changed("hosts-changed xyz", "abc"));
}

}  // namespace
}  // namespace chorus::launcher
