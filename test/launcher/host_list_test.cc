#include "options/host_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "options/usage_error.h"
#include "support/chorus_error_of.h"

namespace chorus::launcher {
namespace {

// The message of the UsageError a call throws.
constexpr auto error_of = chorus_test::error_of<UsageError>;

using ::testing::HasSubstr;

TEST(HostList, ParsesHostsWithAndWithoutSlots) {
  const std::vector<Host> hosts = parse_host_list("node1:2,node2,10.0.0.3:16");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "node1");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].name, "node2");
  EXPECT_EQ(hosts[1].slots, 1);
  EXPECT_EQ(hosts[2].name, "10.0.0.3");
  EXPECT_EQ(hosts[2].slots, 16);
  EXPECT_EQ(total_slots(hosts), 19);
  EXPECT_EQ(format_host_list(hosts), "node1:2,node2:1,10.0.0.3:16");
}

TEST(HostList, RejectsZeroNegativeAndMalformedSlots) {
  EXPECT_EQ(error_of([] { parse_host_list("node1:2,node2:0"); }),
            "-H entry 'node2:0': slots must be a positive integer, got '0'");
  EXPECT_EQ(error_of([] { parse_host_list("node1:-2"); }),
            "-H entry 'node1:-2': slots must be a positive integer, got '-2'");
  EXPECT_EQ(error_of([] { parse_host_list("node1:2x"); }),
            "-H entry 'node1:2x': slots must be a positive integer, got '2x'");
  EXPECT_EQ(error_of([] { parse_host_list("node1:"); }),
            "-H entry 'node1:': slots must be a positive integer, got ''");
}

TEST(HostList, RejectsBadNamesAndEmptyEntries) {
  EXPECT_EQ(error_of([] { parse_host_list("node1,,node2"); }),
            "-H 'node1,,node2' has an empty entry: expected host[:slots],... such as 'node1:2,node2:2'");
  EXPECT_EQ(error_of([] { parse_host_list("node1,"); }),
            "-H 'node1,' has an empty entry: expected host[:slots],... such as 'node1:2,node2:2'");
  EXPECT_EQ(error_of([] { parse_host_list("no de:2"); }),
            "-H entry 'no de:2': 'no de' is not a host name (expected letters, digits, '.', '-' or '_')");
  EXPECT_EQ(error_of([] { parse_host_list(":2"); }),
            "-H entry ':2': '' is not a host name (expected letters, digits, '.', '-' or '_')");
}

TEST(HostList, RejectsDuplicateHostsNamingBothEntries) {
  EXPECT_EQ(error_of([] { parse_host_list("a:2,b:1,a:4"); }),
            "host 'a' is listed twice (-H entry 'a:2' and -H entry 'a:4'): give each host once, with all its slots");
}

TEST(HostList, ChecksSlotsAgainstNp) {
  const std::vector<Host> hosts = parse_host_list("a:2,b:2");
  EXPECT_NO_THROW(check_enough_slots(hosts, 4));
  EXPECT_EQ(error_of([&] { check_enough_slots(hosts, 5); }),
            "-np 5 needs 5 slots but the hosts have only 4 (a:2,b:2): add hosts or slots, or lower -np");
}

TEST(Hostfile, ParsesSlotsCommentsAndBlankLines) {
  const std::vector<Host> hosts = parse_hostfile(
      "# cluster\n"
      "node1 slots=4\n"
      "\n"
      "   node2   slots=2   # the small one\n"
      "node3\n",
      "hostfile h.txt");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "node1");
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[1].name, "node2");
  EXPECT_EQ(hosts[1].slots, 2);
  EXPECT_EQ(hosts[2].name, "node3");
  EXPECT_EQ(hosts[2].slots, 1);
}

TEST(Hostfile, RejectsUnknownSyntaxNamingTheLine) {
  EXPECT_EQ(error_of([] { parse_hostfile("node1 slots=2\nnode2 max_slots=4\n", "hostfile h.txt"); }),
            "hostfile h.txt line 2 'node2 max_slots=4': unexpected 'max_slots=4': expected 'HOST slots=N'");
  EXPECT_EQ(error_of([] { parse_hostfile("node1 slots=2 slots=3\n", "hostfile h.txt"); }),
            "hostfile h.txt line 1 'node1 slots=2 slots=3': unexpected 'slots=3': expected 'HOST slots=N'");
  EXPECT_EQ(error_of([] { parse_hostfile("node1:2\n", "hostfile h.txt"); }),
            "hostfile h.txt line 1 'node1:2': 'node1:2' is not a host name (expected letters, digits, '.', '-' or '_')");
}

TEST(Hostfile, RejectsZeroAndNegativeSlots) {
  EXPECT_EQ(error_of([] { parse_hostfile("a slots=1\n\nb slots=0\n", "hostfile h.txt"); }),
            "hostfile h.txt line 3 'b slots=0': slots must be a positive integer, got '0'");
  EXPECT_EQ(error_of([] { parse_hostfile("a slots=-1\n", "hostfile h.txt"); }),
            "hostfile h.txt line 1 'a slots=-1': slots must be a positive integer, got '-1'");
}

TEST(Hostfile, RejectsDuplicatesAndEmptyFiles) {
  EXPECT_EQ(error_of([] { parse_hostfile("a slots=1\nb slots=1\na slots=2\n", "hostfile h.txt"); }),
            "host 'a' is listed twice (hostfile h.txt line 1 'a slots=1' and hostfile h.txt line 3 'a slots=2'): "
            "give each host once, with all its slots");
  EXPECT_EQ(error_of([] { parse_hostfile("# nothing\n\n", "hostfile h.txt"); }),
            "hostfile h.txt lists no hosts: expected lines of the form 'HOST slots=N'");
}

TEST(Hostfile, UnreadableFileIsAnError) {
  EXPECT_THAT(error_of([] { read_hostfile("/nonexistent/chorus-hosts"); }),
              HasSubstr("--hostfile '/nonexistent/chorus-hosts' cannot be read"));
}

}  // namespace
}  // namespace chorus::launcher
