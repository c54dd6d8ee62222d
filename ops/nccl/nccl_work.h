// NcclWork: a collective enqueued on the CudaDevice's stream. It is done
// when the event recorded after it is (cudaEventQuery), and it has failed
// when the communicator reports an asynchronous error or was aborted.
//
// wait() polls both with sleeps growing from 50 us to 1 ms rather than
// blocking in cudaEventSynchronize: a blocked thread could not notice an
// NCCL error (the kernel may then never finish), another thread's abort(),
// or a peer that never takes part, and would hang with the job. The price
// is at most ~1 ms between the collective's end and wait()'s return, on
// work that takes at least that long. After `timeout` of waiting, wait()
// aborts the communicator and fails with kTimeout: "NCCL <collective> did
// not finish within <N> s: a peer rank did not take part". Which rank is
// left to the runtime's liveness checks: NCCL does not say.
//
// Once the communicator has failed, test() is true and wait() returns the
// failure at once, without waiting for the stream: the aborted kernels are
// ending, and the runtime stops the job after a failed collective.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "ops/cuda/cuda_event.h"
#include "ops/nccl/nccl_communicator.h"
#include "contracts/work.h"

namespace chorus {

class NcclWork : public Work {
 public:
  NcclWork(std::shared_ptr<NcclCommunicator> comm, std::shared_ptr<const CudaEvent> done, std::string collective,
           std::chrono::milliseconds timeout)
      : comm_(std::move(comm)), done_(std::move(done)), collective_(std::move(collective)), timeout_(timeout) {}

  bool test() override;
  Status wait() override;

 private:
  std::shared_ptr<NcclCommunicator> comm_;
  std::shared_ptr<const CudaEvent> done_;
  std::string collective_;
  std::chrono::milliseconds timeout_;
  bool finished_ = false;
  Status outcome_;
};

}  // namespace chorus
