#include "plan/local_host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <set>
#include <sstream>

#include "options/usage_error.h"

namespace chorus::launcher {
namespace {

struct InterfaceAddress {
  std::string interface;
  in_addr address;
  in_addr netmask;
};

std::vector<InterfaceAddress> interface_addresses() {
  std::vector<InterfaceAddress> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET || a->ifa_netmask == nullptr) continue;
    out.push_back({a->ifa_name, reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr,
                   reinterpret_cast<sockaddr_in*>(a->ifa_netmask)->sin_addr});
  }
  freeifaddrs(list);
  return out;
}

std::string to_text(in_addr address) {
  char text[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &address, text, sizeof(text));
  return text;
}

bool is_loopback(in_addr address) { return (ntohl(address.s_addr) >> 24) == 127; }

std::vector<in_addr> resolve_ipv4(const std::string& host) {
  std::vector<in_addr> out;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return out;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    out.push_back(reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr);
  }
  freeaddrinfo(found);
  return out;
}

// The source address the kernel would use to reach `destination` (a UDP
// connect sends nothing).
std::string route_source(in_addr destination) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  to.sin_addr = destination;
  std::string result;
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0) {
    sockaddr_in mine{};
    socklen_t len = sizeof(mine);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &len) == 0) result = to_text(mine.sin_addr);
  }
  close(fd);
  return result;
}

// An address of this machine matching --network-interface: an interface
// name, or an IPv4 subnet a.b.c.d/n.
std::string address_for_interface(const std::string& spec) {
  std::stringstream items(spec);
  std::string item;
  const std::vector<InterfaceAddress> addresses = interface_addresses();
  while (std::getline(items, item, ',')) {
    const size_t slash = item.find('/');
    if (slash == std::string::npos) {
      for (const InterfaceAddress& a : addresses) {
        if (a.interface == item) return to_text(a.address);
      }
      continue;
    }
    in_addr subnet{};
    int bits = -1;
    try {
      bits = std::stoi(item.substr(slash + 1));
    } catch (...) {
      continue;
    }
    if (bits < 0 || bits > 32 || inet_pton(AF_INET, item.substr(0, slash).c_str(), &subnet) != 1) continue;
    const uint32_t mask = bits == 0 ? 0 : htonl(~uint32_t{0} << (32 - bits));
    for (const InterfaceAddress& a : addresses) {
      if ((a.address.s_addr & mask) == (subnet.s_addr & mask)) return to_text(a.address);
    }
  }
  return "";
}

}  // namespace

int online_cores() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

bool cpus_restricted() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return false;
  return CPU_COUNT(&allowed) < online_cores();
}

std::string this_host_name() {
  char name[HOST_NAME_MAX + 1] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

bool is_local_host(const std::string& host) {
  if (host == "localhost" || host.rfind("127.", 0) == 0) return true;
  const std::string mine = this_host_name();
  if (host == mine || host == mine.substr(0, mine.find('.'))) return true;
  const std::vector<InterfaceAddress> addresses = interface_addresses();
  for (const in_addr& resolved : resolve_ipv4(host)) {
    if (is_loopback(resolved)) return true;
    for (const InterfaceAddress& a : addresses) {
      if (a.address.s_addr == resolved.s_addr) return true;
    }
  }
  return false;
}

bool is_executable_file(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string choose_report_address(const JobPlan& plan) {
  if (!plan.options.report_address.empty()) return plan.options.report_address;
  if (plan.all_hosts_local) return "127.0.0.1";
  if (!plan.options.network_interface.empty()) {
    const std::string address = address_for_interface(plan.options.network_interface);
    if (!address.empty()) return address;
  }
  for (const Host& host : plan.hosts) {
    if (is_local_host(host.name)) continue;
    for (const in_addr& resolved : resolve_ipv4(host.name)) {
      const std::string source = route_source(resolved);
      if (!source.empty()) return source;
    }
  }
  for (const in_addr& resolved : resolve_ipv4(this_host_name())) {
    if (!is_loopback(resolved)) return to_text(resolved);
  }
  // Host names that do not resolve here (Slurm node names often do not) and
  // a host name that maps to 127.0.x.x (Debian's default /etc/hosts): any
  // address on a real interface.
  for (const InterfaceAddress& a : interface_addresses()) {
    if (!is_loopback(a.address)) return to_text(a.address);
  }
  throw UsageError("cannot find an address of this machine that the hosts (" + format_host_list(plan.hosts) +
                   ") can reach chorusrun at: give one with --report-address");
}

std::string this_executable() {
  char path[PATH_MAX + 1] = {0};
  const ssize_t n = readlink("/proc/self/exe", path, PATH_MAX);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string("chorusrun");
}

}  // namespace chorus::launcher
