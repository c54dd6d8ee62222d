// Handle: the caller's end of one asynchronous collective (or of a group).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "chorus/event.h"
#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {
namespace detail {
class HandleState;
}

class Handle {
 public:
  Handle() = default;
  explicit Handle(std::shared_ptr<detail::HandleState> state) : state_(std::move(state)) {}

  // False for a default-constructed handle, on which every other accessor
  // throws (kInvalidArgument).
  bool valid() const { return state_ != nullptr; }
  // The tensor name (or group name) this handle waits for.
  const std::string& name() const;

  // Blocks until the collective is done; throws chorus::Error if it failed.
  void wait() const;
  // Like wait(), but gives up after `timeout` and returns false; throws
  // chorus::Error if the collective finished with an error.
  bool wait_for(std::chrono::milliseconds timeout) const;
  // True once the collective is done (successfully or not). Never blocks.
  bool test() const;
  bool poll() const { return test(); }
  // kInProgress while running; OK or the error once done.
  Status status() const;
  // For a consumer on the collective's device: the event that fires once
  // the result is in place there, so that the consumer's stream waits for it
  // instead of the host (wait()). Blocks only until the collective has been
  // handed to the device; for host memory that is when it is done, and the
  // event is done too. Throws the collective's error.
  std::shared_ptr<const Event> completion_event() const;

  // Results. Each belongs to some collectives only: on the handle of another
  // it throws kInvalidArgument, saying so. Otherwise it throws the
  // collective's error (kInProgress while it runs) until it has succeeded.
  // The output that the runtime (or the caller's OutputAllocator) allocated:
  // allgather, alltoall and reducescatter (not a group of several: outputs()).
  Tensor output() const;
  // Every member's output in member order (one for a single collective):
  // allgather, alltoall and reducescatter, grouped or not.
  std::vector<Tensor> outputs() const;
  // alltoall: the number of first-dimension rows received from each rank.
  std::vector<int64_t> received_splits() const;
  // join: the last rank that joined.
  int last_joined_rank() const;

 private:
  const detail::HandleState& state() const;
  std::shared_ptr<detail::HandleState> state_;
};

}  // namespace chorus
