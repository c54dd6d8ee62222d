#include "reports/report_listener.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "options/usage_error.h"

namespace chorus::launcher {
namespace {

// A report line is short; a peer that sends more without a newline is not
// one of ours.
constexpr size_t kMaxLine = 4096;

}  // namespace

ReportListener::ReportListener() {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || listen(fd_, 1024) != 0 ||
      getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string why = std::strerror(errno);
    if (fd_ >= 0) close(fd_);
    throw UsageError("cannot open the TCP listener ranks report to: " + why);
  }
  port_ = ntohs(address.sin_port);
}

ReportListener::~ReportListener() {
  for (Connection& c : connections_) close(c.fd);
  if (fd_ >= 0) close(fd_);
}

void ReportListener::add_poll_fds(std::vector<pollfd>* fds) const {
  fds->push_back({fd_, POLLIN, 0});
  for (const Connection& c : connections_) fds->push_back({c.fd, POLLIN, 0});
}

void ReportListener::accept_all() {
  while (true) {
    const int fd = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN: nothing more waiting
    }
    connections_.push_back(Connection{fd, "", -1});
  }
}

bool ReportListener::read_from(Connection* connection, const std::string& token, const Events& events) {
  char buffer[4096];
  while (true) {
    const ssize_t n = read(connection->fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) return false;
    connection->buffer.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = connection->buffer.find('\n')) != std::string::npos) {
      const std::string line = connection->buffer.substr(0, newline);
      connection->buffer.erase(0, newline + 1);
      const std::optional<ReportMessage> message = parse_report(line);
      if (!message || message->token != token) return false;
      if (message->kind == ReportMessage::Kind::kHello) connection->rank = message->rank;
      events.on_message(*message);
    }
    if (connection->buffer.size() > kMaxLine) return false;
  }
}

void ReportListener::handle(const std::vector<pollfd>& fds, const std::string& token, const Events& events) {
  // fds[i] belong to this listener from the first entry with our fd on.
  size_t first = 0;
  while (first < fds.size() && fds[first].fd != fd_) ++first;
  if (first == fds.size()) return;
  std::vector<int> ready;
  for (size_t i = first + 1; i < fds.size() && i - first - 1 < connections_.size(); ++i) {
    if (fds[i].revents != 0) ready.push_back(fds[i].fd);
  }
  for (size_t i = 0; i < connections_.size();) {
    Connection& c = connections_[i];
    bool keep = true;
    for (int fd : ready) {
      if (fd == c.fd) keep = read_from(&c, token, events);
    }
    if (keep) {
      ++i;
      continue;
    }
    const int rank = c.rank;
    close(c.fd);
    connections_.erase(connections_.begin() + static_cast<long>(i));
    events.on_closed(rank);
  }
  if (fds[first].revents != 0) accept_all();
}

void ReportListener::send_to_ranks(const std::string& line) {
  for (const Connection& c : connections_) {
    if (c.rank < 0) continue;
    // A line is far below a socket buffer: a non-blocking write takes it whole.
    ssize_t n;
    do {
      n = write(c.fd, line.data(), line.size());
    } while (n < 0 && errno == EINTR);
  }
}

bool ReportListener::only_ranks_open(const std::set<int>& ranks) const {
  for (const Connection& c : connections_) {
    if (c.rank < 0 || !ranks.count(c.rank)) return false;
  }
  return true;
}

void ReportListener::drain(const std::string& token, const Events& events) {
  accept_all();
  std::vector<pollfd> fds;
  add_poll_fds(&fds);
  for (pollfd& p : fds) p.revents = POLLIN;  // read attempts never block: the sockets are non-blocking
  handle(fds, token, events);
}

}  // namespace chorus::launcher
