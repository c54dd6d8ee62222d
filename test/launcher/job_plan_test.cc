#include "plan/job_plan.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "commands/openmpi_command.h"
#include "commands/slurm_command.h"
#include "options/usage_error.h"
#include "support/chorus_error_of.h"

namespace chorus::launcher {
namespace {

// The message of the UsageError a call throws.
constexpr auto error_of = chorus_test::error_of<UsageError>;

using Strings = std::vector<std::string>;

SystemFacts facts(int cores = 2) {
  SystemFacts f;
  f.cores = cores;
  f.is_local_host = [](const std::string& h) { return h == "localhost" || h == "me"; };
  f.is_regular_file = [](const std::string& p) { return p == "./train"; };
  return f;
}

JobPlan plan(const Strings& args, const std::map<std::string, std::string>& env = {}, int cores = 2) {
  return plan_job(parse_launch_options(args), Environment(env), facts(cores));
}

const WrapperInvocation kWrapper{"/opt/chorus/bin/chorusrun", "10.0.0.1:5000", "tok"};
const Strings kWrapperTail = {"/opt/chorus/bin/chorusrun", "--chorus-rank-wrapper", "10.0.0.1:5000", "tok"};

Strings concat(std::initializer_list<Strings> parts) {
  Strings out;
  for (const Strings& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const Strings kKeepalive = {"--mca", "oob_tcp_keepalive_time",  "5", "--mca", "oob_tcp_keepalive_intvl", "2",
                            "--mca", "oob_tcp_keepalive_probes", "2"};

TEST(JobPlan, LocalhostWithOneSlotPerRank) {
  const JobPlan p = plan({"-np", "2", "./train", "--lr", "0.1"}, {{"PATH", "/usr/bin"}});
  EXPECT_EQ(p.np, 2);
  EXPECT_EQ(format_host_list(p.hosts), "localhost:2");
  EXPECT_TRUE(p.all_hosts_local);
  EXPECT_FALSE(p.oversubscribed);
  EXPECT_TRUE(p.notices.empty());
  EXPECT_TRUE(p.tag_output);
  EXPECT_EQ(p.launcher, "mpirun");

  const Command c = build_openmpi_command(p, MpiImplementation{"Open MPI", "4.1.4"}, kWrapper, /*is_root=*/true);
  EXPECT_EQ(p.cpus_per_rank, 1);
  EXPECT_EQ(c.argv, concat({{"mpirun", "--allow-run-as-root", "-np", "2", "-H", "localhost:2", "--use-hwthread-cpus",
                             "--bind-to", "hwthread", "--map-by", "slot:PE=1"},
                            kKeepalive,
                            {"-x", "PATH"},
                            kWrapperTail,
                            {"--tag", "--", "./train", "--lr", "0.1"}}));
  EXPECT_TRUE(c.environment.empty());
}

TEST(JobPlan, AutoBindingGivesEachRankAnEqualShareOfThisMachinesCpus) {
  const MpiImplementation mpi{"Open MPI", "4.1.4"};
  auto binding = [&](const JobPlan& p) {
    const Strings argv = build_openmpi_command(p, mpi, kWrapper, false).argv;
    const auto begin = argv.begin() + 5;  // after mpirun -np N -H hosts
    return Strings(begin, std::find(begin, argv.end(), "--mca"));
  };
  EXPECT_EQ(binding(plan({"-np", "1", "./train"}, {}, /*cores=*/4)),
            (Strings{"--use-hwthread-cpus", "--bind-to", "hwthread", "--map-by", "slot:PE=4"}));
  // 8 CPUs among 3 ranks: 2 each, the rest left free.
  EXPECT_EQ(binding(plan({"-np", "3", "./train"}, {}, 8)),
            (Strings{"--use-hwthread-cpus", "--bind-to", "hwthread", "--map-by", "slot:PE=2"}));
  EXPECT_EQ(binding(plan({"-np", "2", "-H", "localhost:4", "./train"}, {}, 2)),
            (Strings{"--use-hwthread-cpus", "--bind-to", "hwthread", "--map-by", "slot:PE=1"}));
  const Strings unbound = {"--bind-to", "none", "--map-by", "slot"};
  EXPECT_EQ(binding(plan({"-np", "3", "./train"}, {}, 2)), unbound);  // oversubscribed
  EXPECT_EQ(binding(plan({"-np", "2", "--bind-to", "none", "./train"}, {}, 4)), unbound);
  EXPECT_EQ(binding(plan({"-H", "a:1,b:1", "./train"}, {}, 4)), unbound);  // other hosts' CPUs are unknown
  EXPECT_EQ(binding(plan({"-H", "me:1,localhost:1", "./train"}, {}, 4)), unbound);
  EXPECT_EQ(binding(plan({"-np", "2", "--bind-to", "core", "./train"}, {}, 4)),
            (Strings{"--bind-to", "core", "--map-by", "slot"}));
  // Under taskset or a cpuset, mpirun would bind to CPUs chorusrun may not use.
  SystemFacts restricted = facts(4);
  restricted.cpus_restricted = true;
  const JobPlan p = plan_job(parse_launch_options({"-np", "2", "./train"}), Environment(std::map<std::string, std::string>{}), restricted);
  EXPECT_EQ(p.cpus_per_rank, 0);
  EXPECT_EQ(binding(p), unbound);
}

TEST(JobPlan, OversubscribesBeyondTheCoresAndSaysSoOnce) {
  const JobPlan p = plan({"-np", "3", "./train"}, {}, /*cores=*/2);
  EXPECT_TRUE(p.oversubscribed);
  EXPECT_EQ(p.notices, (Strings{"chorusrun: 3 ranks on 2 cores: oversubscribing (idle ranks yield the CPU)"}));
  const Command c = build_openmpi_command(p, MpiImplementation{"Open MPI", "4.1.4"}, kWrapper, /*is_root=*/false);
  EXPECT_EQ(c.argv, concat({{"mpirun", "-np", "3", "-H", "localhost:3", "--bind-to", "none", "--map-by", "slot"},
                            kKeepalive,
                            {"--mca", "mpi_yield_when_idle", "1"},
                            kWrapperTail,
                            {"--tag", "--", "./train"}}));
}

TEST(JobPlan, ForwardsRuntimeFlagsExportsAndInterfaces) {
  const JobPlan p = plan({"-H", "a:2,b:2", "--cycle-time-ms", "5", "-x", "NCCL_DEBUG=INFO", "-x", "HOME",
                          "--network-interface", "10.200.0.0/24", "--mpi-args", "--mca plm_rsh_agent /x/rsh",
                          "--bind-to", "core", "--no-tag-output", "./train"},
                         {{"HOME", "/root"}, {"CHORUS_CACHE_CAPACITY", "10"}, {"CHORUS_LAUNCHER_TOKEN", "old"}});
  EXPECT_EQ(p.np, 4);  // all slots when -np is not given
  EXPECT_FALSE(p.all_hosts_local);
  EXPECT_FALSE(p.tag_output);
  const Command c = build_openmpi_command(p, MpiImplementation{"Open MPI", "4.1.4"}, kWrapper, false);
  EXPECT_EQ(c.argv, concat({{"mpirun", "-np", "4", "-H", "a:2,b:2", "--bind-to", "core", "--map-by", "slot"},
                            kKeepalive,
                            {"--mca", "btl_tcp_if_include", "10.200.0.0/24", "--mca", "oob_tcp_if_include",
                             "10.200.0.0/24", "-x", "CHORUS_CACHE_CAPACITY", "-x", "CHORUS_CYCLE_TIME_MS", "-x",
                             "NCCL_DEBUG", "-x", "HOME", "--mca", "plm_rsh_agent", "/x/rsh"},
                            kWrapperTail,
                            {"--no-tag", "--", "./train"}}));
  EXPECT_EQ(c.environment, (std::vector<std::pair<std::string, std::string>>{{"CHORUS_CYCLE_TIME_MS", "5"},
                                                                             {"NCCL_DEBUG", "INFO"}}));
  EXPECT_EQ(c.to_shell().substr(0, 54), "CHORUS_CYCLE_TIME_MS=5 NCCL_DEBUG=INFO mpirun -np 4 -H");
}

TEST(JobPlan, FlagsOverrideTheEnvironment) {
  const JobPlan p = plan({"-np", "1", "--log-level", "info", "./train"}, {{"CHORUS_LOG_LEVEL", "error"}});
  ASSERT_EQ(p.variables.size(), 1u);
  EXPECT_EQ(p.variables[0].name, "CHORUS_LOG_LEVEL");
  EXPECT_EQ(p.variables[0].value, "info");
  EXPECT_TRUE(p.variables[0].set);
  EXPECT_FALSE(p.tag_output);  // one rank: nothing to tell apart
}

TEST(JobPlan, BadInputIsReportedBeforeAnythingRuns) {
  EXPECT_EQ(error_of([] { plan({"./train"}); }),
            "-np is required when no hosts are given (-H, --hostfile or a Slurm allocation)");
  EXPECT_EQ(error_of([] { plan({"-np", "5", "-H", "a:2,b:2", "./train"}); }),
            "-np 5 needs 5 slots but the hosts have only 4 (a:2,b:2): add hosts or slots, or lower -np");
  EXPECT_EQ(error_of([] { plan({"-np", "2", "./missing"}); }),
            "PROGRAM './missing' does not exist or is not an executable file");
  EXPECT_EQ(error_of([] { plan({"-np", "2", "-x", "UNSET_THING", "./train"}); }),
            "-x UNSET_THING: UNSET_THING is not set in chorusrun's environment; give a value with -x UNSET_THING=VALUE");
  EXPECT_EQ(error_of([] { plan({"-np", "2", "-x", "1BAD=2", "./train"}); }),
            "-x '1BAD=2' is invalid: expected NAME or NAME=VALUE with NAME made of letters, digits and '_'");
  EXPECT_EQ(error_of([] { plan({"-np", "2", "-x", "CHORUS_LAUNCHER_RANK=1", "./train"}); }),
            "-x 'CHORUS_LAUNCHER_RANK=1': CHORUS_LAUNCHER_RANK is set by chorusrun for each rank and cannot be forwarded");
  EXPECT_EQ(error_of([] { plan({"-np", "2", "-x", "CHORUS_CYCLE_TIME_MS=fast", "./train"}); }),
            "-x CHORUS_CYCLE_TIME_MS='fast' is invalid: expected a number of milliseconds in [0, 10000]");
  EXPECT_EQ(error_of([] { plan({"-np", "2", "./train"}, {{"CHORUS_STALL_CHECK_SECONDS", "-5"}}); }),
            "CHORUS_STALL_CHECK_SECONDS='-5' in chorusrun's environment is invalid: expected a number of seconds in "
            "[0, 86400]");
  EXPECT_EQ(error_of([] { plan({"--launcher", "srun", "-H", "a:2", "./train"}); }),
            "-H and --hostfile cannot be used with --launcher srun: srun places ranks in the Slurm allocation; use "
            "--launcher mpirun to choose hosts");
}

const std::map<std::string, std::string> kSlurm = {{"SLURM_JOB_ID", "42"},
                                                   {"SLURM_JOB_NODELIST", "node[01-02],gpu-a1"},
                                                   {"SLURM_TASKS_PER_NODE", "2(x2),1"},
                                                   {"SLURM_NTASKS", "5"}};

TEST(JobPlan, InsideSlurmHostsAndNpComeFromTheAllocationAndSrunLaunches) {
  const JobPlan p = plan({"--cycle-time-ms", "1", "--network-interface", "ib0", "./train"}, kSlurm);
  EXPECT_EQ(p.launcher, "srun");
  EXPECT_EQ(p.np, 5);
  EXPECT_EQ(format_host_list(p.hosts), "node01:2,node02:2,gpu-a1:1");
  EXPECT_EQ(p.host_source, "Slurm job 42");
  const Command c = build_srun_command(p, kWrapper);
  EXPECT_EQ(c.argv, concat({{"srun", "--mpi=pmix", "--ntasks=5", "--kill-on-bad-exit=1"},
                            kWrapperTail,
                            {"--tag", "--", "./train"}}));
  EXPECT_EQ(c.environment, (std::vector<std::pair<std::string, std::string>>{
                               {"CHORUS_CYCLE_TIME_MS", "1"}, {"OMPI_MCA_btl_tcp_if_include", "ib0"}}));
}

// chorusrun --elastic after a node failed: srun must be told the nodes
// left, or it takes the allocation's SLURM_NNODES and refuses the exclusion
// ("Only allocated 1 nodes asked for 2", seen on the suite's cluster).
TEST(JobPlan, AnElasticSrunStepLeavesFailedNodesOutAndSaysHowManyAreLeft) {
  JobPlan p = plan({"-np", "3", "./train"}, kSlurm);
  p.excluded_nodes = {"node01", "node02"};
  p.srun_nodes = 1;
  const Command c = build_srun_command(p, kWrapper);
  EXPECT_EQ(c.argv, concat({{"srun", "--mpi=pmix", "--ntasks=3", "--kill-on-bad-exit=1", "--nodes=1",
                             "--exclude=node01,node02", "--overlap"},
                            kWrapperTail,
                            {"--tag", "--", "./train"}}));
}

TEST(JobPlan, InsideSlurmMpirunGetsTheAllocationsHosts) {
  const JobPlan p = plan({"--launcher", "mpirun", "-np", "4", "./train"}, kSlurm);
  EXPECT_EQ(p.launcher, "mpirun");
  const Command c = build_openmpi_command(p, MpiImplementation{"Open MPI", "4.1.4"}, kWrapper, false);
  EXPECT_EQ(Strings(c.argv.begin(), c.argv.begin() + 5),
            (Strings{"mpirun", "-np", "4", "-H", "node01:2,node02:2,gpu-a1:1"}));
  EXPECT_EQ(error_of([] { plan({"-np", "6", "./train"}, kSlurm); }),
            "-np 6 needs 6 slots but the hosts have only 5 (node01:2,node02:2,gpu-a1:1): add hosts or slots, or lower "
            "-np");
}

TEST(JobPlan, ExplicitHostsWinOverSlurm) {
  const JobPlan p = plan({"-H", "me:2", "./train"}, kSlurm);
  EXPECT_EQ(p.launcher, "mpirun");
  EXPECT_EQ(p.np, 2);
  EXPECT_TRUE(p.all_hosts_local);
}

TEST(Command, ShellQuotingRoundTrips) {
  Command c;
  c.environment = {{"A", "x y"}};
  c.argv = {"prog", "it's", "", "plain-1.0/x:y,z=1"};
  EXPECT_EQ(c.to_shell(), "A='x y' prog 'it'\\''s' '' plain-1.0/x:y,z=1");
}

}  // namespace
}  // namespace chorus::launcher
