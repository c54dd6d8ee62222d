#include "plan/local_host.h"

#include <gtest/gtest.h>

namespace chorus::launcher {
namespace {

JobPlan remote_plan() {
  JobPlan plan;
  plan.hosts = {Host{"no-such-host.invalid", 2, "-H"}};
  plan.all_hosts_local = false;
  return plan;
}

TEST(LocalHost, RecognisesThisMachine) {
  EXPECT_TRUE(is_local_host("localhost"));
  EXPECT_TRUE(is_local_host("127.0.0.1"));
  EXPECT_TRUE(is_local_host(this_host_name()));
  EXPECT_FALSE(is_local_host("no-such-host.invalid"));
  EXPECT_GE(online_cores(), 1);
}

TEST(LocalHost, ReportAddressChoice) {
  JobPlan plan = remote_plan();
  plan.options.report_address = "head-node";
  EXPECT_EQ(choose_report_address(plan), "head-node");

  plan = remote_plan();
  plan.all_hosts_local = true;
  EXPECT_EQ(choose_report_address(plan), "127.0.0.1");

  // --network-interface as a subnet or an interface name picks this
  // machine's address there (every Linux machine has lo at 127.0.0.1).
  plan = remote_plan();
  plan.options.network_interface = "192.0.2.0/31,127.0.0.0/8";
  EXPECT_EQ(choose_report_address(plan), "127.0.0.1");
  plan.options.network_interface = "lo";
  EXPECT_EQ(choose_report_address(plan), "127.0.0.1");
}

TEST(LocalHost, ExecutableFiles) {
  EXPECT_TRUE(is_executable_file("/bin/sh"));
  EXPECT_FALSE(is_executable_file("/etc/hostname-that-does-not-exist"));
  EXPECT_FALSE(is_executable_file("/tmp"));
  EXPECT_FALSE(this_executable().empty());
}

}  // namespace
}  // namespace chorus::launcher
