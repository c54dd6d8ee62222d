#include "plan/slurm_environment.h"

#include <gtest/gtest.h>

#include <map>

#include "options/usage_error.h"
#include "support/chorus_error_of.h"

namespace chorus::launcher {
namespace {

// The message of the UsageError a call throws.
constexpr auto error_of = chorus_test::error_of<UsageError>;

using Strings = std::vector<std::string>;

EnvLookup lookup(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(SlurmNodelist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(expand_slurm_nodelist("node[01-04,07],gpu-a[1-2]"),
            (Strings{"node01", "node02", "node03", "node04", "node07", "gpu-a1", "gpu-a2"}));
  EXPECT_EQ(expand_slurm_nodelist("n1"), (Strings{"n1"}));
  EXPECT_EQ(expand_slurm_nodelist("n1,n2"), (Strings{"n1", "n2"}));
  EXPECT_EQ(expand_slurm_nodelist("c[08-11]"), (Strings{"c08", "c09", "c10", "c11"}));
  EXPECT_EQ(expand_slurm_nodelist("c[9-10]"), (Strings{"c9", "c10"}));
  EXPECT_EQ(expand_slurm_nodelist("x[5]"), (Strings{"x5"}));
  EXPECT_EQ(expand_slurm_nodelist("rack[1-2]-n[1,3]"), (Strings{"rack1-n1", "rack1-n3", "rack2-n1", "rack2-n3"}));
  EXPECT_EQ(expand_slurm_nodelist("a[1-2]b"), (Strings{"a1b", "a2b"}));
}

TEST(SlurmNodelist, RejectsMalformedLists) {
  const std::string expected = " (expected names such as 'node[01-04,07],gpu-a[1-2]')";
  EXPECT_EQ(error_of([] { expand_slurm_nodelist("node[1-3"); }),
            "SLURM_JOB_NODELIST='node[1-3' is invalid: a '[' is not closed" + expected);
  EXPECT_EQ(error_of([] { expand_slurm_nodelist("node1-3]"); }),
            "SLURM_JOB_NODELIST='node1-3]' is invalid: a ']' has no matching '['" + expected);
  EXPECT_EQ(error_of([] { expand_slurm_nodelist("node[4-2]"); }),
            "SLURM_JOB_NODELIST='node[4-2]' is invalid: range '4-2' ends before it starts" + expected);
  EXPECT_EQ(error_of([] { expand_slurm_nodelist("node[a-b]"); }),
            "SLURM_JOB_NODELIST='node[a-b]' is invalid: '[a-b]' has 'a-b', not a number or a range N-M" + expected);
  EXPECT_EQ(error_of([] { expand_slurm_nodelist("node[]"); }),
            "SLURM_JOB_NODELIST='node[]' is invalid: '[]' has '', not a number or a range N-M" + expected);
  EXPECT_EQ(error_of([] { expand_slurm_nodelist("n1,,n2"); }),
            "SLURM_JOB_NODELIST='n1,,n2' is invalid: it has an empty entry" + expected);
  EXPECT_EQ(error_of([] { expand_slurm_nodelist(""); }), "SLURM_JOB_NODELIST='' is invalid: it is empty" + expected);
  EXPECT_EQ(error_of([] { expand_slurm_nodelist("n[1-999999999]"); }),
            "SLURM_JOB_NODELIST='n[1-999999999]' is invalid: too many nodes" + expected);
}

TEST(SlurmTasksPerNode, ExpandsRepeats) {
  EXPECT_EQ(parse_slurm_tasks_per_node("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(parse_slurm_tasks_per_node("4"), (std::vector<int>{4}));
  EXPECT_EQ(parse_slurm_tasks_per_node("1,2(x2)"), (std::vector<int>{1, 2, 2}));
}

TEST(SlurmTasksPerNode, RejectsMalformedEntries) {
  const std::string expected = "': expected entries N or N(xM) separated by commas, such as '2(x3),1'";
  EXPECT_EQ(error_of([] { parse_slurm_tasks_per_node("2(3),1"); }),
            "SLURM_TASKS_PER_NODE='2(3),1' is invalid at '2(3)" + expected);
  EXPECT_EQ(error_of([] { parse_slurm_tasks_per_node("0"); }), "SLURM_TASKS_PER_NODE='0' is invalid at '0" + expected);
  EXPECT_EQ(error_of([] { parse_slurm_tasks_per_node("2(x0)"); }),
            "SLURM_TASKS_PER_NODE='2(x0)' is invalid at '2(x0)" + expected);
  EXPECT_EQ(error_of([] { parse_slurm_tasks_per_node("2,"); }), "SLURM_TASKS_PER_NODE='2,' is invalid at '" + expected);
  EXPECT_EQ(error_of([] { parse_slurm_tasks_per_node("two"); }),
            "SLURM_TASKS_PER_NODE='two' is invalid at 'two" + expected);
}

TEST(SlurmAllocation, AbsentOutsideSlurm) {
  EXPECT_FALSE(discover_slurm_allocation(lookup({{"SLURM_JOB_NODELIST", "n1"}})).has_value());
}

TEST(SlurmAllocation, HostsSlotsAndNtasks) {
  const auto allocation = discover_slurm_allocation(lookup({{"SLURM_JOB_ID", "42"},
                                                            {"SLURM_JOB_NODELIST", "n[1-3],gpu1"},
                                                            {"SLURM_TASKS_PER_NODE", "2(x3),1"},
                                                            {"SLURM_NTASKS", "7"}}));
  ASSERT_TRUE(allocation.has_value());
  EXPECT_EQ(allocation->job_id, "42");
  EXPECT_EQ(format_host_list(allocation->hosts), "n1:2,n2:2,n3:2,gpu1:1");
  ASSERT_TRUE(allocation->ntasks.has_value());
  EXPECT_EQ(*allocation->ntasks, 7);
}

TEST(SlurmAllocation, MismatchedAndMissingVariablesAreErrors) {
  EXPECT_EQ(error_of([] {
              discover_slurm_allocation(
                  lookup({{"SLURM_JOB_ID", "42"}, {"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}}));
            }),
            "SLURM_JOB_NODELIST='n[1-3]' has 3 nodes but SLURM_TASKS_PER_NODE='2(x2)' gives tasks for 2: expected one "
            "task count per node");
  EXPECT_EQ(error_of([] { discover_slurm_allocation(lookup({{"SLURM_JOB_ID", "42"}, {"SLURM_TASKS_PER_NODE", "1"}})); }),
            "SLURM_JOB_ID is set (42) but SLURM_JOB_NODELIST is not: run chorusrun inside a complete Slurm allocation, "
            "or give -H");
  EXPECT_EQ(error_of([] { discover_slurm_allocation(lookup({{"SLURM_JOB_ID", "42"}, {"SLURM_JOB_NODELIST", "n1"}})); }),
            "SLURM_JOB_ID is set (42) but SLURM_TASKS_PER_NODE is not: run chorusrun inside a complete Slurm "
            "allocation, or give -H");
  EXPECT_EQ(error_of([] {
              discover_slurm_allocation(lookup({{"SLURM_JOB_ID", "42"},
                                                {"SLURM_JOB_NODELIST", "n1"},
                                                {"SLURM_TASKS_PER_NODE", "1"},
                                                {"SLURM_NTASKS", "x"}}));
            }),
            "SLURM_NTASKS='x' is invalid: expected a positive integer");
}

TEST(SlurmAllocation, FallsBackToSlurmNodelist) {
  const auto allocation = discover_slurm_allocation(
      lookup({{"SLURM_JOB_ID", "7"}, {"SLURM_NODELIST", "a,b"}, {"SLURM_TASKS_PER_NODE", "1(x2)"}}));
  ASSERT_TRUE(allocation.has_value());
  EXPECT_EQ(format_host_list(allocation->hosts), "a:1,b:1");
  EXPECT_FALSE(allocation->ntasks.has_value());
}

}  // namespace
}  // namespace chorus::launcher
