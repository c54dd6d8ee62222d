// PointToPoint: named tensors sent straight from one rank to another, outside
// the negotiation (docs/DESIGN.md, "Point-to-point"). The calling thread
// starts a transfer and the threads that wait for transfers drive them: no
// thread of the runtime polls for them, so nothing spins while none is
// outstanding, and a waiter sees its message as soon as the transport has it.
//
// Matching: between two ranks, transfers of one name are received in the
// order they were sent; transfers of different names never wait for each
// other. A receive learns the sender's dtype and shape and fails, naming
// both ranks and both, when they differ from its own tensor's; the message
// is consumed all the same, so later ones are unaffected.
//
// This is the interface a transport implements (MPI: ops/mpi/); the
// runtime owns one through Communication and adapts it to handles.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

// One transfer, as errors describe it.
struct TransferInfo {
  bool is_send = true;
  std::string name;
  int peer = -1;  // the destination of a send, the source of a receive
};
// "send of 'x' to rank 1", "receive of 'x' from rank 1"
std::string describe(const TransferInfo& info);

class PointToPoint {
 public:
  using Clock = std::chrono::steady_clock;
  // Called exactly once per started transfer, with its outcome, from
  // whichever thread drives it to completion (or closes the transport);
  // never with the transport's lock held.
  using Completion = std::function<void(const Status&)>;
  // The error a transfer still in flight fails with when the transport closes.
  using ErrorFor = std::function<Status(const TransferInfo&)>;

  virtual ~PointToPoint() = default;

  // Start sending `tensor` (host memory, which stays untouched until `done`)
  // under `name` to rank `dest`. The arguments were checked by the caller
  // (a valid tensor, another rank of the job); an error here (closed, a
  // name too long to carry) means nothing was started and `done` is dropped.
  virtual Status send(const std::string& name, const Tensor& tensor, int dest, Completion done) = 0;
  // Start receiving the next transfer named `name` from `source` into `tensor`.
  virtual Status recv(const std::string& name, const Tensor& tensor, int source, Completion done) = 0;

  // Advances every transfer without blocking (for test()).
  virtual void poll() = 0;
  // Advances transfers until `finished()` returns true or `deadline` passes:
  // the progress of a thread that waits. A peer that dies or a close() ends
  // the transfers concerned, which must make `finished` true.
  virtual void drive(const std::function<bool()>& finished, std::optional<Clock::time_point> deadline) = 0;

  // Fails every transfer in flight with error_for(its info) and refuses new
  // ones. Messages already delivered are matched first. Idempotent; after
  // it, the transport makes no more calls into its communication library.
  virtual void close(const ErrorFor& error_for) = 0;
};

}  // namespace chorus
