#include "ops/heartbeat/heartbeat.h"

#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

#include "base/logging.h"
#include "chorus/elastic.h"

namespace chorus {

// One datagram; every rank runs the same binary on the same architecture,
// so the layout is the struct's.
struct Heartbeat::Datagram {
  static constexpr uint32_t kMagic = 0x43484842;  // "CHHB"
  uint32_t magic;
  uint32_t kind;
  uint64_t job;
  int32_t from;
  int32_t subject;     // kLost: the rank lost
  double silent_seconds;  // kLost: how long it had been silent
};

namespace {

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

std::string seconds_text(double seconds) {
  std::ostringstream out;
  out.precision(seconds < 10 ? 2 : 3);
  out << seconds;
  return out.str();
}

// This rank's card and its bound socket, or why there are none.
Status open_socket(const HeartbeatOptions& options, HeartbeatCard* card, int* socket_fd) {
  std::string spec = options.interface;
  std::string origin = "CHORUS_HEARTBEAT_INTERFACE";
  const char* open_mpi = std::getenv("OMPI_MCA_btl_tcp_if_include");
  if (spec.empty() && open_mpi != nullptr && *open_mpi != '\0') {
    // MPI's traffic goes there, so the peers are reachable there.
    spec = open_mpi;
    origin = "OMPI_MCA_btl_tcp_if_include (the heartbeat follows Open MPI's choice unless "
             "CHORUS_HEARTBEAT_INTERFACE is set)";
  }
  CHORUS_RETURN_IF_ERROR(select_interfaces(spec, origin, host_interfaces(), &card->addresses));
  card->host = host_label(hostname(), std::getenv("SLURMD_NODENAME"));
  card->host_key = elastic_host_name(hostname(), std::getenv("SLURMD_NODENAME"));
  card->pid = static_cast<int32_t>(getpid());
  card->stack = this_stack();
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Internal(std::string("heartbeat: socket() failed: ") + std::strerror(errno));
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof any;
  if (bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&any), &length) != 0) {
    const Status failed = Status::Internal(std::string("heartbeat: binding a UDP socket failed: ") + std::strerror(errno));
    close(fd);
    return failed;
  }
  card->port = ntohs(any.sin_port);
  *socket_fd = fd;
  return Status::OK();
}

}  // namespace

Status Heartbeat::start(SetupChannel& channel, const HeartbeatOptions& options, OnPeerLost on_lost, EndJob end_job,
                        std::unique_ptr<Heartbeat>* out) {
  const int rank = channel.rank();
  const int size = channel.size();
  HeartbeatCard mine;
  int fd = -1;
  const Status opened = open_socket(options, &mine, &fd);
  const auto close_on_error = [&](const Status& status) {
    if (!status.ok() && fd >= 0) close(fd);
    return status;
  };
  CHORUS_RETURN_IF_ERROR(close_on_error(agree_on_setup(channel, opened, "opening its socket", "The heartbeat")));

  uint64_t job = 0;
  if (rank == 0) job = std::random_device{}() * uint64_t{0x9e3779b97f4a7c15} ^ static_cast<uint64_t>(getpid());
  CHORUS_RETURN_IF_ERROR(close_on_error(channel.broadcast(&job, sizeof job, 0)));
  const auto bytes = mine.serialize();
  std::vector<unsigned char> all(HeartbeatCard::kBytes * static_cast<size_t>(size));
  CHORUS_RETURN_IF_ERROR(close_on_error(channel.allgather(bytes.data(), bytes.size(), all.data())));
  std::vector<HeartbeatCard> cards;
  std::vector<uint32_t> addresses;
  Status reachable;
  for (int r = 0; r < size; ++r) {
    cards.push_back(HeartbeatCard::parse(&all[HeartbeatCard::kBytes * static_cast<size_t>(r)]));
    const std::optional<uint32_t> address = r == rank ? INADDR_LOOPBACK : address_for(mine, cards.back());
    if (!address && reachable.ok()) {
      std::string offered;
      for (const Ipv4Interface& i : cards.back().addresses) offered += (offered.empty() ? "" : ", ") + describe(i);
      reachable = Status::InvalidArgument(
          "heartbeat: rank " + std::to_string(r) + " on host " + cards.back().host + " offers no address rank " +
          std::to_string(rank) + " can reach (it offers " + (offered.empty() ? "none" : offered) +
          "; set CHORUS_HEARTBEAT_INTERFACE to the network the hosts share)");
    }
    addresses.push_back(address.value_or(0));
  }
  CHORUS_RETURN_IF_ERROR(
      close_on_error(agree_on_setup(channel, reachable, "finding its peers' addresses", "The heartbeat")));
  out->reset(new Heartbeat(options, rank, size, job, fd, std::move(cards), std::move(addresses), std::move(on_lost),
                           std::move(end_job)));
  return Status::OK();
}

Heartbeat::Heartbeat(const HeartbeatOptions& options, int rank, int size, uint64_t job, int socket,
                     std::vector<HeartbeatCard> cards, std::vector<uint32_t> addresses, OnPeerLost on_lost,
                     EndJob end_job)
    : options_(options),
      rank_(rank),
      size_(size),
      job_(job),
      socket_(socket),
      wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      cards_(std::move(cards)),
      addresses_(std::move(addresses)),
      on_lost_(std::move(on_lost)),
      end_job_(std::move(end_job)),
      predecessor_((rank + size - 1) % size),
      successor_((rank + 1) % size) {
  watching_ = size > 1;
  thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() {
  stop();
  close(socket_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void Heartbeat::stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_release);
  const uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof one);
  thread_.join();
}

Status Heartbeat::lost_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lost_reason_;
}

std::string Heartbeat::name_of(int rank) const {
  const HeartbeatCard& card = cards_.at(static_cast<size_t>(rank));
  return "rank " + std::to_string(rank) + " (host " + card.host + ", pid " + std::to_string(card.pid) + ")";
}

void Heartbeat::send(Kind kind, int to, int subject, double silent_seconds) {
  if (size_ < 2 || to == rank_) return;
  const Datagram datagram{Datagram::kMagic, static_cast<uint32_t>(kind), job_, rank_, subject, silent_seconds};
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(cards_[static_cast<size_t>(to)].port);
  peer.sin_addr.s_addr = htonl(addresses_[static_cast<size_t>(to)]);
  // Non-blocking: a full buffer or an unreachable network (a cut link) drops
  // this one; the watcher's timeout is made of several.
  if (sendto(socket_, &datagram, sizeof datagram, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&peer), sizeof peer) < 0) {
    CHORUS_LOG(kTrace, "heartbeat: sending to rank " << to << " failed: " << std::strerror(errno));
  }
}

void Heartbeat::receive(Clock::time_point now) {
  Datagram datagram{};
  while (true) {
    const ssize_t got = recv(socket_, &datagram, sizeof datagram, MSG_DONTWAIT);
    if (got < 0) {
      if (errno == EINTR) continue;
      return;  // EAGAIN: all read; ECONNREFUSED etc. from an earlier send: nothing to read
    }
    if (got != static_cast<ssize_t>(sizeof datagram) || datagram.magic != Datagram::kMagic || datagram.job != job_ ||
        datagram.from < 0 || datagram.from >= size_) {
      continue;  // not ours
    }
    switch (static_cast<Kind>(datagram.kind)) {
      case Kind::kBeat:
        if (datagram.from == predecessor_) last_heard_ = now;
        break;
      case Kind::kBye:
        if (datagram.from == predecessor_) watching_ = false;
        break;
      case Kind::kLost:
        if (datagram.subject >= 0 && datagram.subject < size_) {
          declare(datagram.subject, datagram.from, datagram.silent_seconds);
        }
        break;
    }
  }
}

void Heartbeat::declare(int subject, int reporter, double silent_seconds) {
  if (lost_.load(std::memory_order_acquire)) return;
  const std::string limit = "CHORUS_HEARTBEAT_TIMEOUT_SECONDS=" + seconds_text(options_.timeout.count());
  std::string why;
  if (subject == rank_) {
    why = name_of(reporter) + " reports that this rank (" + name_of(rank_) + ") stopped answering: no heartbeat for " +
          seconds_text(silent_seconds) + " s (" + limit + ")";
  } else {
    why = name_of(subject) + " stopped answering: no heartbeat for " + seconds_text(silent_seconds) + " s (" + limit +
          "), noticed by " + (reporter == rank_ ? "this rank (" + std::to_string(rank_) + ")" : name_of(reporter));
  }
  const Status status = Status::Aborted(why);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lost_reason_ = status;
  }
  lost_.store(true, std::memory_order_release);
  CHORUS_LOG(kError, why);
  if (reporter == rank_) {
    // Everyone else hears it from here; twice, in case one is dropped.
    lost_subject_ = subject;
    lost_silent_ = silent_seconds;
    for (int r = 0; r < size_; ++r) {
      if (r != subject) send(Kind::kLost, r, subject, silent_seconds);
    }
    resend_at_ = Clock::now() + std::chrono::milliseconds(200);
  }
  // The end on a thread of its own: on_lost may block (on a lock held by a
  // thread that waits for the lost rank), and this thread has still to tell.
  std::thread([end = end_job_, grace = options_.end_grace, why] {
    std::this_thread::sleep_for(grace);
    end(why);
  }).detach();
  LostPeer peer;
  if (subject != rank_) {
    peer.rank = subject;
    peer.host_key = cards_[static_cast<size_t>(subject)].host_key;
  }
  on_lost_(status, peer);
}

void Heartbeat::run() {
  pthread_setname_np(pthread_self(), "chorus-hb");  // at most 15 characters
  const auto timeout = std::chrono::duration_cast<Clock::duration>(options_.timeout);
  const Clock::duration interval = timeout / 4;
  Clock::time_point now = Clock::now();
  last_heard_ = now;
  Clock::time_point next_beat = now;
  Clock::time_point last_wake = now;
  while (!stopping_.load(std::memory_order_acquire)) {
    Clock::time_point deadline = next_beat;
    if (watching_ && !lost()) deadline = std::min(deadline, last_heard_ + timeout);
    if (resend_at_) deadline = std::min(deadline, *resend_at_);
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd fds[2] = {{socket_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    (void)poll(fds, 2, static_cast<int>(std::max<int64_t>(0, wait)));
    now = Clock::now();
    // This thread did not run for much longer than it slept (its process was
    // stopped, or starved): the silence it finds is its own, not the peer's.
    if (now - last_wake > interval + timeout / 2) last_heard_ = now;
    last_wake = now;
    receive(now);
    if (watching_ && !lost() && now - last_heard_ >= timeout) {
      declare(predecessor_, rank_, std::chrono::duration<double>(now - last_heard_).count());
    }
    if (resend_at_ && now >= *resend_at_) {
      resend_at_.reset();
      for (int r = 0; r < size_; ++r) {
        if (r != lost_subject_) send(Kind::kLost, r, lost_subject_, lost_silent_);
      }
    }
    if (now >= next_beat) {
      send(Kind::kBeat, successor_, -1, 0.0);
      next_beat = now + interval;
    }
  }
  // Shut down: the watcher stops watching (twice, in case one is dropped).
  send(Kind::kBye, successor_, -1, 0.0);
  send(Kind::kBye, successor_, -1, 0.0);
}

}  // namespace chorus
