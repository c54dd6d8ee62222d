// chorusrun's side of the rank reports: a TCP listener on every interface,
// its connections, and the lines they carry (report_protocol.h).
#pragma once

#include <poll.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "reports/report_protocol.h"

namespace chorus::launcher {

class ReportListener {
 public:
  // Listens on 0.0.0.0 with a port the kernel picks; throws UsageError when
  // no socket can be opened.
  ReportListener();
  ~ReportListener();
  ReportListener(const ReportListener&) = delete;
  ReportListener& operator=(const ReportListener&) = delete;

  int port() const { return port_; }

  struct Events {
    // A well-formed line carrying this job's token.
    std::function<void(const ReportMessage&)> on_message;
    // A connection closed; `rank` is the rank its hello named, or -1.
    std::function<void(int rank)> on_closed;
  };

  // Adds the listener and the connections to `fds` (before poll) ...
  void add_poll_fds(std::vector<pollfd>* fds) const;
  // ... and handles what poll found (accepts, reads, closes).
  void handle(const std::vector<pollfd>& fds, const std::string& token, const Events& events);
  // Accepts and reads whatever is already waiting, without blocking.
  void drain(const std::string& token, const Events& events);
  size_t open_connections() const { return connections_.size(); }
  // Whether every open connection is a rank wrapper's whose rank is in `ranks`.
  bool only_ranks_open(const std::set<int>& ranks) const;
  // Writes `line` to every connection whose hello arrived (the rank
  // wrappers'); a connection that cannot take it is left to close.
  void send_to_ranks(const std::string& line);

 private:
  struct Connection {
    int fd = -1;
    std::string buffer;
    int rank = -1;  // from its hello
  };
  void accept_all();
  // False when the connection is finished (EOF, error or a foreign token).
  bool read_from(Connection* connection, const std::string& token, const Events& events);

  int fd_ = -1;
  int port_ = 0;
  std::vector<Connection> connections_;
};

}  // namespace chorus::launcher
