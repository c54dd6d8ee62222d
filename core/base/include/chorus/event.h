// Event: a point in a stream of work on a device. A producer hands one in
// with a tensor whose contents are still being written (Tensor::ready), and
// a handle hands one back with a result that is still being written
// (Handle::completion_event()). Host memory needs none: a CPU tensor is
// ready when it is submitted, and a CPU result when its handle is done.
#pragma once

#include <memory>

namespace chorus {

class Event {
 public:
  virtual ~Event() = default;
  // Whether the work recorded before this event has finished. Never blocks.
  virtual bool done() const = 0;
  // Blocks the calling thread until done() holds.
  virtual void synchronize() const = 0;
};

// An event that is done from the start (host memory's).
std::shared_ptr<const Event> done_event();

}  // namespace chorus
