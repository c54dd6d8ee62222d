// Work: a collective that a backend has started. A call that returns work
// need not have finished it: a device collective is queued on the device's
// stream and finishes later. The executor keeps such work in flight and
// completes the handles once it is done, so the background thread never
// waits for a device. Host backends (MPI, shared memory) finish before they
// return; their work is done from the start.
#pragma once

#include <memory>

#include "chorus/status.h"

namespace chorus {

class Work {
 public:
  virtual ~Work() = default;
  // Whether it has finished, successfully or not. Never blocks.
  virtual bool test() = 0;
  // Blocks until it has finished; its outcome (the same on every call).
  virtual Status wait() = 0;
};
using WorkPtr = std::unique_ptr<Work>;

// Work that had finished, with `status`, when the call that made it returned.
WorkPtr finished_work(Status status);

}  // namespace chorus
