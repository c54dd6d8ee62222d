#include "ops/heartbeat/heartbeat_card.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace chorus {
namespace {

uint32_t mask_of(int prefix_length) {
  return prefix_length <= 0 ? 0 : prefix_length >= 32 ? 0xffffffffu : ~((uint32_t{1} << (32 - prefix_length)) - 1);
}

bool is_loopback(uint32_t address) { return (address >> 24) == 127; }

bool parse_network(const std::string& text, uint32_t* address, int* prefix_length) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return false;
  in_addr parsed{};
  if (inet_pton(AF_INET, text.substr(0, slash).c_str(), &parsed) != 1) return false;
  const std::string bits = text.substr(slash + 1);
  if (bits.empty() || bits.size() > 2 || !std::all_of(bits.begin(), bits.end(), ::isdigit)) return false;
  *prefix_length = std::stoi(bits);
  if (*prefix_length > 32) return false;
  *address = ntohl(parsed.s_addr);
  return true;
}

std::string list_of(const std::vector<Ipv4Interface>& interfaces) {
  std::string text;
  for (const Ipv4Interface& i : interfaces) text += (text.empty() ? "" : ", ") + describe(i);
  return text.empty() ? "none" : text;
}

template <typename T>
void put(unsigned char*& at, const T& value) {
  std::memcpy(at, &value, sizeof value);
  at += sizeof value;
}

template <typename T>
T get(const unsigned char*& at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  at += sizeof value;
  return value;
}

// The host key sits after the fixed fields (host, pid, stack, port, the
// addresses), at the end of the card.
constexpr size_t kHostKeyOffset = 1 + HeartbeatCard::kMaxHostChars + 4 + 24 + 2 + 1 + HeartbeatCard::kMaxAddresses * 5;
static_assert(kHostKeyOffset + 1 + HeartbeatCard::kMaxHostKeyChars <= HeartbeatCard::kBytes,
              "the host key must fit in the card");

}  // namespace

std::string ipv4_text(uint32_t address) {
  return std::to_string(address >> 24) + "." + std::to_string((address >> 16) & 255) + "." +
         std::to_string((address >> 8) & 255) + "." + std::to_string(address & 255);
}

std::string describe(const Ipv4Interface& interface) {
  return ipv4_text(interface.address) + "/" + std::to_string(interface.prefix_length) +
         (interface.name.empty() ? "" : " (" + interface.name + ")");
}

std::vector<Ipv4Interface> host_interfaces() {
  std::vector<Ipv4Interface> found;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return found;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_UP) == 0) continue;
    const uint32_t address = ntohl(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
    int prefix = 32;
    if (i->ifa_netmask != nullptr) {
      prefix = __builtin_popcount(reinterpret_cast<const sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr);
    }
    found.push_back({i->ifa_name, address, prefix});
  }
  freeifaddrs(list);
  return found;
}

Status select_interfaces(const std::string& spec, const std::string& origin, const std::vector<Ipv4Interface>& all,
                         std::vector<Ipv4Interface>* out) {
  out->clear();
  if (spec.empty()) {
    *out = all;
    return Status::OK();
  }
  std::vector<std::string> names;
  std::vector<std::pair<uint32_t, int>> networks;
  std::stringstream entries(spec);
  for (std::string entry; std::getline(entries, entry, ',');) {
    if (entry.empty()) {
      return Status::InvalidArgument(origin + "='" + spec + "' has an empty entry: expected interface names and " +
                                     "IPv4 networks (a.b.c.d/n) separated by commas");
    }
    if (entry.find('/') != std::string::npos) {
      uint32_t address = 0;
      int prefix = 0;
      if (!parse_network(entry, &address, &prefix)) {
        return Status::InvalidArgument(origin + "='" + spec + "': '" + entry +
                                       "' is not an IPv4 network: expected a.b.c.d/n with n in [0, 32]");
      }
      networks.emplace_back(address, prefix);
    } else {
      names.push_back(entry);
    }
  }
  for (const Ipv4Interface& i : all) {
    bool selected = std::find(names.begin(), names.end(), i.name) != names.end();
    for (const auto& [network, prefix] : networks) {
      selected = selected || (i.address & mask_of(prefix)) == (network & mask_of(prefix));
    }
    if (selected) out->push_back(i);
  }
  if (out->empty()) {
    return Status::InvalidArgument(origin + "='" + spec +
                                   "' selects none of this host's interfaces that are up with an IPv4 address (" +
                                   list_of(all) + ")");
  }
  return Status::OK();
}

StackId this_stack() {
  StackId id{};
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string uuid;
  boot >> uuid;
  uuid.erase(std::remove(uuid.begin(), uuid.end(), '-'), uuid.end());
  if (uuid.size() == 32 && uuid.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos) {
    id[0] = std::stoull(uuid.substr(0, 16), nullptr, 16);
    id[1] = std::stoull(uuid.substr(16), nullptr, 16);
  }
  struct stat net{};
  if (stat("/proc/self/ns/net", &net) == 0) id[2] = static_cast<uint64_t>(net.st_ino);
  return id;
}

std::array<unsigned char, HeartbeatCard::kBytes> HeartbeatCard::serialize() const {
  std::array<unsigned char, kBytes> bytes{};
  unsigned char* at = bytes.data();
  const std::string name = host.substr(0, kMaxHostChars);
  put(at, static_cast<uint8_t>(name.size()));
  std::memcpy(at, name.data(), name.size());
  at += kMaxHostChars;
  put(at, pid);
  for (uint64_t word : stack) put(at, word);
  put(at, port);
  const size_t count = std::min(addresses.size(), kMaxAddresses);
  put(at, static_cast<uint8_t>(count));
  for (size_t i = 0; i < count; ++i) {
    put(at, addresses[i].address);
    put(at, static_cast<uint8_t>(addresses[i].prefix_length));
  }
  at = bytes.data() + kHostKeyOffset;
  const std::string key = host_key.substr(0, kMaxHostKeyChars);
  put(at, static_cast<uint8_t>(key.size()));
  std::memcpy(at, key.data(), key.size());
  return bytes;
}

HeartbeatCard HeartbeatCard::parse(const unsigned char* bytes) {
  HeartbeatCard card;
  const unsigned char* at = bytes;
  const size_t name_size = std::min<size_t>(get<uint8_t>(at), kMaxHostChars);
  card.host.assign(reinterpret_cast<const char*>(at), name_size);
  at += kMaxHostChars;
  card.pid = get<int32_t>(at);
  for (uint64_t& word : card.stack) word = get<uint64_t>(at);
  card.port = get<uint16_t>(at);
  const size_t count = std::min<size_t>(get<uint8_t>(at), kMaxAddresses);
  for (size_t i = 0; i < count; ++i) {
    const uint32_t address = get<uint32_t>(at);
    card.addresses.push_back({"", address, get<uint8_t>(at)});
  }
  at = bytes + kHostKeyOffset;
  const size_t key_size = std::min<size_t>(get<uint8_t>(at), kMaxHostKeyChars);
  card.host_key.assign(reinterpret_cast<const char*>(at), key_size);
  return card;
}

std::optional<uint32_t> address_for(const HeartbeatCard& me, const HeartbeatCard& peer) {
  // Same stack: the peer's socket listens on every address, loopback too.
  if (me.stack == peer.stack && me.stack != StackId{}) return INADDR_LOOPBACK;
  std::optional<uint32_t> any;
  for (const Ipv4Interface& theirs : peer.addresses) {
    if (is_loopback(theirs.address)) continue;
    if (!any) any = theirs.address;
    for (const Ipv4Interface& mine : me.addresses) {
      if (is_loopback(mine.address)) continue;
      const uint32_t mask = mask_of(std::min(mine.prefix_length, theirs.prefix_length));
      if ((mine.address & mask) == (theirs.address & mask)) return theirs.address;
    }
  }
  return any;
}

std::string host_label(const std::string& hostname, const char* slurm_node) {
  if (slurm_node == nullptr || *slurm_node == '\0' || hostname == slurm_node) return hostname;
  return hostname + " (Slurm node " + slurm_node + ")";
}

}  // namespace chorus
