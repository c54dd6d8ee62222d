// HeartbeatCard: what a rank tells its peers at init so that they can reach
// its heartbeat socket and name it in an error: its host, its pid, its
// addresses and port, and which IP stack it lives in.
//
// Which addresses: the heartbeat must travel where MPI travels (a host may
// have interfaces its peers cannot reach, and on our test machine each
// network namespace is a "host" whose loopback is its own). A rank offers
// the IPv4 addresses of its interfaces that are up, filtered the way Open
// MPI's btl_tcp_if_include filters them (interface names and a.b.c.d/n
// networks): CHORUS_HEARTBEAT_INTERFACE when set, else Open MPI's own
// setting when the launcher set one, else every interface. A sender picks,
// for each peer: 127.0.0.1 when the peer shares its IP stack (same machine
// boot and network namespace: the socket listens on every address), else the
// peer's first non-loopback address on a network this host is on too, else
// its first non-loopback address.
//
// Everything here but host_interfaces() and this_stack() is pure, for tests.
#pragma once

#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {

struct Ipv4Interface {
  std::string name;   // "eth0"
  uint32_t address;   // host byte order
  int prefix_length;  // 24 for a /24
};

// "10.200.0.1/24 (veth0)"; an address in host byte order as a.b.c.d.
std::string describe(const Ipv4Interface& interface);
std::string ipv4_text(uint32_t address);

// The interfaces of this host that are up and have an IPv4 address.
std::vector<Ipv4Interface> host_interfaces();

// Those of `all` that `spec` selects: a comma-separated list of interface
// names and networks (a.b.c.d/n); an empty spec selects all of them. An
// error names `origin` (the variable the spec came from) when an entry does
// not parse or nothing matches.
Status select_interfaces(const std::string& spec, const std::string& origin, const std::vector<Ipv4Interface>& all,
                         std::vector<Ipv4Interface>* out);

// Identifies an IP stack: the machine's boot id and the network namespace.
using StackId = std::array<uint64_t, 3>;
StackId this_stack();

struct HeartbeatCard {
  static constexpr size_t kMaxAddresses = 8;
  static constexpr size_t kMaxHostChars = 95;
  static constexpr size_t kMaxHostKeyChars = 63;
  static constexpr size_t kBytes = 256;

  std::string host;  // as errors name it (truncated to kMaxHostChars)
  // As chorusrun --elastic names the host (chorus::elastic_host_name: the
  // Slurm node under Slurm), for the `lost` report (truncated to
  // kMaxHostKeyChars).
  std::string host_key;
  int32_t pid = 0;
  StackId stack{};
  uint16_t port = 0;  // host byte order
  std::vector<Ipv4Interface> addresses;  // at most kMaxAddresses (names are not sent)

  // Fixed-size wire form, for an allgather.
  std::array<unsigned char, kBytes> serialize() const;
  static HeartbeatCard parse(const unsigned char* bytes);
};

// Where `me` sends to reach `peer` (an address in host byte order); nullopt
// when the peer offered nothing this host can use.
std::optional<uint32_t> address_for(const HeartbeatCard& me, const HeartbeatCard& peer);

// The host as errors name it: the host name, with the Slurm node when Slurm
// started the process (several virtual nodes may share one host name).
std::string host_label(const std::string& hostname, const char* slurm_node);

}  // namespace chorus
