// MpiPointToPoint: PointToPoint over MPI, on a communicator of its own.
//
// Wire protocol. Every message starts with a header (p2p_header.h) on tag
// 0, which names the tensor and carries its dtype and shape. Data of at most
// `packed_limit` bytes travels inside the header: one message. Larger data
// follows in data messages (1 GiB at most each) on tags that the sender
// numbers per destination (1, 2, ... up to MPI_TAG_UB, then around again),
// named in the header: a data message can only match the receive posted for
// it, whatever the name.
//
// Receiving. One receive for headers from any rank is always posted. An
// arriving header goes to the oldest receive posted for its (source, name),
// or waits in `arrived_` until one is posted. MPI delivers the headers of
// one sender in order (one tag), so messages of one name are matched in the
// order sent, and a name nobody receives yet never holds up another.
//
// Progress. Nothing runs in the background: send() and recv() post their
// MPI requests from the calling thread, and poll()/drive() (threads in
// test() or wait()) test the header receive and the requests in flight.
// drive() tests without pause for `busy` (50 us), then for WaitPolicy::spin
// yielding the CPU between tests (as Open MPI's own waits do here), then sleeps with backoff, which
// bounds what a long wait costs the CPU. While transfers with a peer on this
// host are outstanding it checks every LocalPeers::kInterval that the peer
// is alive: a dead one fails them with an error naming it.
#pragma once

#include <mpi.h>

#include <chrono>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ops/local_peers.h"
#include "ops/mpi/mpi_request_wait.h"
#include "ops/mpi/p2p_header.h"
#include "contracts/point_to_point.h"

namespace chorus {

struct MpiPointToPointOptions {
  // Data of at most this many bytes travels inside its header (measured:
  // docs/DESIGN.md, "Point-to-point"). Every rank must use the same value.
  size_t packed_limit = 4096;
  // A waiter first tests without yielding for this long: a message that is
  // on its way arrives within microseconds, and on a loaded machine each
  // yield may hand the core to another process for a whole time slice
  // (measured: docs/DESIGN.md, "Point-to-point"). Then `wait`'s phases.
  std::chrono::microseconds busy{50};
  WaitPolicy wait;
};

class MpiPointToPoint : public PointToPoint {
 public:
  // `comm`: used by nothing else (it belongs to the caller, who frees it
  // after close()). `peers`: the other ranks of this host.
  static Status create(MPI_Comm comm, LocalPeers peers, const MpiPointToPointOptions& options,
                       std::shared_ptr<MpiPointToPoint>* out);
  ~MpiPointToPoint() override;

  Status send(const std::string& name, const Tensor& tensor, int dest, Completion done) override;
  Status recv(const std::string& name, const Tensor& tensor, int source, Completion done) override;
  void poll() override;
  void drive(const std::function<bool()>& finished, std::optional<Clock::time_point> deadline) override;
  void close(const ErrorFor& error_for) override;

  // The most bytes a header may take without packed data: names (and
  // shapes) longer than that are refused.
  static constexpr size_t kMaxHeaderBytes = 4096;

 private:
  struct Transfer;
  struct Arrived {  // a header whose receive has not been posted yet
    P2PHeader header;
    std::vector<char> packed;
  };
  using Key = std::pair<int, std::string>;  // (peer, name)
  using Finished = std::vector<std::pair<Completion, Status>>;

  MpiPointToPoint(MPI_Comm comm, LocalPeers peers, const MpiPointToPointOptions& options);
  // One step of progress; completions run after the lock is released.
  void progress();
  void step_locked(Finished* finished);
  void post_header_recv_locked();
  void on_header_locked(int source, size_t size, Finished* finished);
  // Delivers the header's message to `recv`: packed data is copied now,
  // other data gets its receives posted; a mismatch fails `recv` and
  // discards the data.
  void match_locked(std::unique_ptr<Transfer> recv, const P2PHeader& header, const char* packed,
                    Finished* finished);
  void watch_peers_locked(Finished* finished);
  // Ends the transfers with `peer` (every peer when -1), cancelling their requests.
  void fail_locked(int peer, const ErrorFor& error_for, Finished* finished);
  void fail_everything_locked(const Status& status, Finished* finished);
  int32_t next_data_tag_locked(int dest, int32_t chunks);

  const MPI_Comm comm_;
  const MpiPointToPointOptions options_;
  int rank_ = 0;
  int size_ = 0;
  int32_t tag_ub_ = 32767;
  std::map<int, LocalPeer> local_peers_;

  std::mutex mutex_;
  bool closed_ = false;
  Status closed_reason_;
  std::vector<int32_t> next_tag_;  // per destination
  std::vector<char> header_buffer_;
  MPI_Request header_request_ = MPI_REQUEST_NULL;
  std::list<std::unique_ptr<Transfer>> active_;             // MPI requests in flight
  std::map<Key, std::deque<std::unique_ptr<Transfer>>> waiting_;  // receives without a header yet
  std::map<Key, std::deque<Arrived>> arrived_;
  Clock::time_point next_watch_;
};

}  // namespace chorus
