#include "base/launcher_rendezvous.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "base/logging.h"

namespace chorus {
namespace {

constexpr int kConnectTimeoutMs = 5000;

}  // namespace

// A non-blocking connect bounded by the timeout, so that an unreachable
// launcher delays init() by seconds, never indefinitely.
int connect_with_timeout(const std::string& host, int port, int timeout_ms, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    *error = std::string("cannot resolve '") + host + "': " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  *error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int result = connect(fd, a->ai_addr, a->ai_addrlen);
    if (result != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int ready;
      do {
        ready = poll(&p, 1, timeout_ms);
      } while (ready < 0 && errno == EINTR);
      int so_error = ETIMEDOUT;
      socklen_t len = sizeof(so_error);
      if (ready == 1) getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      result = so_error == 0 ? 0 : -1;
      errno = so_error;
    }
    if (result == 0) break;
    *error = std::strerror(errno);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

std::string launcher_init_message(const std::string& token, int rank) {
  return "init " + token + " " + std::to_string(rank) + "\n";
}

bool split_launcher_address(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) return false;
  const std::string digits = address.substr(colon + 1);
  int value = 0;
  const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (result.ec != std::errc() || result.ptr != digits.data() + digits.size()) return false;
  if (value < 1 || value > 65535) return false;
  *host = address.substr(0, colon);
  *port = value;
  return true;
}

void report_init_to_launcher(const Config::Lookup& lookup) {
  auto get = [&](const char* name) { return lookup ? lookup(name) : std::getenv(name); };
  const char* address = get(kLauncherAddressVariable);
  if (address == nullptr) return;
  const char* token = get(kLauncherTokenVariable);
  const char* rank_text = get(kLauncherRankVariable);
  std::string host;
  int port = 0;
  int rank = -1;
  if (rank_text != nullptr) {
    const std::string r(rank_text);
    std::from_chars(r.data(), r.data() + r.size(), rank);
  }
  if (!split_launcher_address(address, &host, &port) || token == nullptr || rank < 0) {
    CHORUS_LOG(kWarning, "not reporting to chorusrun: " << kLauncherAddressVariable << "='" << address
                                                        << "' (expected host:port), "
                                                        << kLauncherTokenVariable << " and "
                                                        << kLauncherRankVariable << " must all be set");
    return;
  }
  std::string error;
  const int fd = connect_with_timeout(host, port, kConnectTimeoutMs, &error);
  if (fd < 0) {
    CHORUS_LOG(kWarning, "cannot tell chorusrun at " << address << " that rank " << rank
                                                     << " reached init(): " << error);
    return;
  }
  const std::string line = launcher_init_message(token, rank);
  size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      CHORUS_LOG(kWarning, "cannot tell chorusrun at " << address << " that rank " << rank
                                                       << " reached init(): " << std::strerror(errno));
      break;
    }
    sent += static_cast<size_t>(n);
  }
  close(fd);
}

}  // namespace chorus
