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
#include <mutex>
#include <optional>
#include <thread>

#include "base/logging.h"
#include "chorus/elastic.h"

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

namespace {

// Where and as whom this rank reports, from the variables chorusrun's rank
// wrapper set; nullopt (after a warning, when they are set but malformed)
// when there is no chorusrun to report to.
struct LauncherContact {
  std::string address, host, token;
  int port = 0;
  int rank = -1;
};

std::optional<LauncherContact> launcher_contact(const Config::Lookup& lookup) {
  auto get = [&](const char* name) { return lookup ? lookup(name) : std::getenv(name); };
  const char* address = get(kLauncherAddressVariable);
  if (address == nullptr) return std::nullopt;
  const char* token = get(kLauncherTokenVariable);
  const char* rank_text = get(kLauncherRankVariable);
  LauncherContact contact;
  contact.address = address;
  if (rank_text != nullptr) {
    const std::string r(rank_text);
    std::from_chars(r.data(), r.data() + r.size(), contact.rank);
  }
  if (!split_launcher_address(address, &contact.host, &contact.port) || token == nullptr || contact.rank < 0) {
    CHORUS_LOG(kWarning, "not reporting to chorusrun: " << kLauncherAddressVariable << "='" << address
                                                        << "' (expected host:port), "
                                                        << kLauncherTokenVariable << " and "
                                                        << kLauncherRankVariable << " must all be set");
    return std::nullopt;
  }
  contact.token = token;
  return contact;
}

// One connection, one line; `what` completes "cannot tell chorusrun at X ...".
void send_line(const LauncherContact& contact, const std::string& line, int timeout_ms, const std::string& what) {
  std::string error;
  const int fd = connect_with_timeout(contact.host, contact.port, timeout_ms, &error);
  if (fd < 0) {
    CHORUS_LOG(kWarning, "cannot tell chorusrun at " << contact.address << " " << what << ": " << error);
    return;
  }
  // A line is far below a socket buffer: a new connection takes it whole
  // without waiting.
  size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      CHORUS_LOG(kWarning, "cannot tell chorusrun at " << contact.address << " " << what << ": "
                                                       << std::strerror(errno));
      break;
    }
    sent += static_cast<size_t>(n);
  }
  close(fd);
}

}  // namespace

void report_init_to_launcher(const Config::Lookup& lookup) {
  const std::optional<LauncherContact> contact = launcher_contact(lookup);
  if (!contact) return;
  send_line(*contact, launcher_init_message(contact->token, contact->rank), kConnectTimeoutMs,
            "that rank " + std::to_string(contact->rank) + " reached init()");
}

std::string launcher_lost_message(const std::string& token, int rank, int lost_rank, const std::string& host) {
  return "lost " + token + " " + std::to_string(rank) + " " + std::to_string(lost_rank) + " " +
         (host.empty() ? "?" : host) + "\n";
}

void LostRankReporter::report(int lost_rank, const std::string& host, const Config::Lookup& lookup) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (reported_) return;
    reported_ = true;
  }
  std::optional<LauncherContact> contact = launcher_contact(lookup);
  if (!contact) return;
  const std::string line = launcher_lost_message(contact->token, contact->rank, lost_rank, host);
  // Detached: the job is about to be aborted, and this thread must not hold
  // the caller (the heartbeat's thread, the background thread) meanwhile.
  std::thread([contact = std::move(*contact), line, lost_rank] {
    send_line(contact, line, kLostReportTimeoutMs, "that rank " + std::to_string(lost_rank) + " was lost");
  }).detach();
}

void report_lost_to_launcher(int lost_rank, const std::string& host, const Config::Lookup& lookup) {
  static LostRankReporter reporter;
  reporter.report(lost_rank, host, lookup);
}

std::string this_elastic_host() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return elastic_host_name(name, std::getenv("SLURMD_NODENAME"));
}

}  // namespace chorus
