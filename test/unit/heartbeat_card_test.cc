// The heartbeat's addresses (ops/heartbeat/heartbeat_card.h): which of a
// host's interfaces it offers, which address of a peer it sends to, and the
// card's wire form.
#include "ops/heartbeat/heartbeat_card.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace chorus {
namespace {

uint32_t ip(int a, int b, int c, int d) {
  return (static_cast<uint32_t>(a) << 24) | (static_cast<uint32_t>(b) << 16) | (static_cast<uint32_t>(c) << 8) |
         static_cast<uint32_t>(d);
}

const std::vector<Ipv4Interface> kHost = {
    {"lo", ip(127, 0, 0, 1), 8}, {"eth0", ip(192, 168, 1, 7), 24}, {"veth1", ip(10, 200, 0, 2), 24}};

std::vector<std::string> names(const std::vector<Ipv4Interface>& interfaces) {
  std::vector<std::string> out;
  for (const Ipv4Interface& i : interfaces) out.push_back(i.name);
  return out;
}

TEST(HeartbeatCard, SelectsByNameAndNetworkLikeOpenMpi) {
  std::vector<Ipv4Interface> out;
  ASSERT_TRUE(select_interfaces("", "X", kHost, &out).ok());
  EXPECT_EQ(names(out), (std::vector<std::string>{"lo", "eth0", "veth1"}));
  ASSERT_TRUE(select_interfaces("10.200.0.0/24", "X", kHost, &out).ok());
  EXPECT_EQ(names(out), (std::vector<std::string>{"veth1"}));
  ASSERT_TRUE(select_interfaces("lo,192.168.0.0/16", "X", kHost, &out).ok());
  EXPECT_EQ(names(out), (std::vector<std::string>{"lo", "eth0"}));
}

TEST(HeartbeatCard, BadOrUnmatchedSpecsAreErrorsNamingTheVariable) {
  std::vector<Ipv4Interface> out;
  EXPECT_EQ(select_interfaces("10.0.0.0/33", "CHORUS_HEARTBEAT_INTERFACE", kHost, &out).message(),
            "CHORUS_HEARTBEAT_INTERFACE='10.0.0.0/33': '10.0.0.0/33' is not an IPv4 network: expected a.b.c.d/n "
            "with n in [0, 32]");
  EXPECT_EQ(select_interfaces("eth0,,lo", "CHORUS_HEARTBEAT_INTERFACE", kHost, &out).message(),
            "CHORUS_HEARTBEAT_INTERFACE='eth0,,lo' has an empty entry: expected interface names and IPv4 networks "
            "(a.b.c.d/n) separated by commas");
  EXPECT_EQ(select_interfaces("wlan0", "CHORUS_HEARTBEAT_INTERFACE", kHost, &out).message(),
            "CHORUS_HEARTBEAT_INTERFACE='wlan0' selects none of this host's interfaces that are up with an IPv4 "
            "address (127.0.0.1/8 (lo), 192.168.1.7/24 (eth0), 10.200.0.2/24 (veth1))");
}

HeartbeatCard card(StackId stack, std::vector<Ipv4Interface> addresses) {
  HeartbeatCard c;
  c.host = "h";
  c.stack = stack;
  c.addresses = std::move(addresses);
  return c;
}

TEST(HeartbeatCard, SameStackTalksOverLoopback) {
  const HeartbeatCard me = card({1, 2, 3}, {{"veth1", ip(10, 200, 0, 2), 24}});
  const HeartbeatCard peer = card({1, 2, 3}, {{"veth1", ip(10, 200, 0, 2), 24}});
  EXPECT_EQ(address_for(me, peer), ip(127, 0, 0, 1));
}

TEST(HeartbeatCard, OtherStackGetsTheAddressOnASharedNetwork) {
  const HeartbeatCard me = card({1, 2, 3}, {{"lo", ip(127, 0, 0, 1), 8}, {"veth1", ip(10, 200, 0, 1), 24}});
  // Another namespace on the same machine: its loopback is not ours.
  const HeartbeatCard peer = card({1, 2, 4}, {{"lo", ip(127, 0, 0, 1), 8},
                                              {"eth0", ip(192, 168, 1, 9), 24},
                                              {"veth2", ip(10, 200, 0, 2), 24}});
  EXPECT_EQ(address_for(me, peer), ip(10, 200, 0, 2));
  // Nothing shared: its first non-loopback address (a router may know the way).
  const HeartbeatCard far = card({9, 9, 9}, {{"lo", ip(127, 0, 0, 1), 8}, {"eth0", ip(172, 16, 0, 5), 16}});
  EXPECT_EQ(address_for(me, far), ip(172, 16, 0, 5));
  // Loopback only, on another stack: unreachable.
  const HeartbeatCard only_lo = card({9, 9, 9}, {{"lo", ip(127, 0, 0, 1), 8}});
  EXPECT_FALSE(address_for(me, only_lo).has_value());
}

TEST(HeartbeatCard, WireFormRoundTrips) {
  HeartbeatCard c = card({0x1122334455667788ULL, 42, 4026531992ULL}, {{"", ip(10, 200, 0, 2), 24}, {"", ip(127, 0, 0, 1), 8}});
  c.host = host_label("node7", "n2");
  c.pid = 12345;
  c.port = 40001;
  const auto bytes = c.serialize();
  const HeartbeatCard back = HeartbeatCard::parse(bytes.data());
  EXPECT_EQ(back.host, "node7 (Slurm node n2)");
  EXPECT_EQ(back.pid, 12345);
  EXPECT_EQ(back.stack, c.stack);
  EXPECT_EQ(back.port, 40001);
  ASSERT_EQ(back.addresses.size(), 2u);
  EXPECT_EQ(back.addresses[0].address, ip(10, 200, 0, 2));
  EXPECT_EQ(back.addresses[0].prefix_length, 24);
  EXPECT_EQ(host_label("node7", nullptr), "node7");
  EXPECT_EQ(host_label("node7", "node7"), "node7");
}

}  // namespace
}  // namespace chorus
