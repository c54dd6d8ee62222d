// DeviceHierarchicalBackend: Horovod's hierarchical allreduce for a device's
// memory (a GPU's), for a job whose ranks span hosts with the same number of
// ranks, L, on each. An allreduce that HierarchicalSelection picks runs as
//   1. a reduce-scatter within the host (the `local` backend: NCCL over the
//      host's ranks), leaving each local rank its share, in scratch memory
//      of this backend's;
//   2. an allreduce of that share across hosts, among the ranks with the
//      same local rank (the `cross` backend: on a GPU the host-staged one,
//      copying the share to pinned host memory, running MPI there in the
//      stream's order and copying it back), times the allreduce's factor;
//   3. an allgather of the shares within the host (`local` again), into the
//      output.
// Each local rank sends 1/L of the message across hosts, side by side, as
// on the CPU path (ops/shm/hierarchical_allreduce.h). Every other
// collective, and the allreduces the selection leaves, go to the flat
// backend in front of which this one sits (NCCL over every rank).
//
// One stream: the flat, local and cross backends all queue their work on the
// one DeviceOps of the device, which is also what the executor packs and
// unpacks with, so the steps run in the order they are asked for with no
// host waiting in between, and every rank asks for the same steps in the same
// order (the ranks of a host on the local communicator, the ranks of a local
// rank on the cross one).
//
// Shares (HierarchicalShares): local rank r's share is elements
// [r * body, (r + 1) * body) with body = count / L, and the last local rank
// also takes the remainder, the count % L < L elements after L * body, so
// its share is still one contiguous range. The even part goes through the
// local backend as equal counts (NCCL's ReduceScatter and AllGather, its
// fastest collectives); the remainder as a second reduce-scatter and
// allgather whose counts are 0 except the last rank's (one ncclReduce and one
// ncclBroadcast), which reads the input and writes the output where they
// are. Padding the message to a multiple of L instead would cost copying the
// whole input into a padded buffer and the result out of one. The last local
// rank's share lies in its scratch as [even part | remainder], so step 2 is
// one allreduce for every rank. A message of fewer than L elements is all
// remainder: only the last local ranks cross hosts.
//
// The factor (an average's 1/size, a postscale) goes with step 2, once per
// element: each element lies in exactly one local rank's share. The host
// backend there scales as it reduces, so a float16/bfloat16 cross-host sum
// and its factor are rounded once; NCCL's reduce-scatter in step 1 adds
// 16-bit values in 16 bits (one rounding per step of its ring) as it does on
// the flat path. With one rank per host (only under
// CHORUS_HIERARCHICAL_ALLREDUCE=on) step 2 alone runs, from input to output.
//
// Work: the steps' works together (done when all are; the first error).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "contracts/device.h"
#include "ops/forwarding_backend.h"
#include "ops/hierarchical_selection.h"

namespace chorus {

// How an allreduce of `count` elements is cut among the L ranks of a host
// (see above).
struct HierarchicalShares {
  int64_t body = 0;       // elements of each local rank's share of the even part: count / L
  int64_t remainder = 0;  // count % L, after the L * body of the even part, on the last local rank
  int local_size = 1;

  static HierarchicalShares of(int64_t count, int local_size);
  // Local rank r's share: body, plus the remainder on the last local rank.
  int64_t share(int local_rank) const;
  // The reduce-scatter and allgather counts of the even part (body for every
  // local rank) and of the remainder (0 but for the last local rank).
  std::vector<int64_t> body_counts() const;
  std::vector<int64_t> remainder_counts() const;
};

// The parts the backend is made of (ops/device_hierarchical_setup.h makes
// them from the job's communicators).
struct DeviceHierarchy {
  // The device whose one stream every part's work goes on; its memory holds
  // this backend's scratch (one share).
  std::shared_ptr<DeviceOps> device;
  // Over this host's ranks, in local-rank order: steps 1 and 3.
  std::unique_ptr<Backend> local;
  // Over local rank r of every host, in host order: step 2.
  std::unique_ptr<Backend> cross;
  int local_rank = 0;
  int local_size = 1;
  int hosts = 1;
  // What the parts run on (their communicators), released after them.
  std::shared_ptr<void> resources;
};

class DeviceHierarchicalBackend : public DeviceForwardingBackend {
 public:
  DeviceHierarchicalBackend(std::unique_ptr<Backend> flat, DeviceHierarchy hierarchy,
                            const HierarchicalSelection& selection);
  // Closes the NCCL communicators (the local one, then the flat one) before
  // the cross backend waits for the stream, then frees the scratch memory and
  // the communicators.
  ~DeviceHierarchicalBackend() override;
  DeviceHierarchicalBackend(const DeviceHierarchicalBackend&) = delete;
  DeviceHierarchicalBackend& operator=(const DeviceHierarchicalBackend&) = delete;

  const char* name() const override { return "hierarchical-device"; }
  int hosts() const { return hierarchy_.hosts; }
  int local_size() const { return hierarchy_.local_size; }

  WorkPtr allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                    double factor) override;
  // The flat backend's answer for the allreduces it runs; none of the
  // hierarchical ones is reduced where it lies.
  bool fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const override;
  // Ends the work of every part: the flat, local and cross backends.
  void abort(const std::string& reason) override;

 private:
  WorkPtr hierarchical_allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                                 double factor);
  // Makes the scratch hold at least `bytes`; a buffer that must grow is
  // replaced once the stream has run the work queued so far, which may still
  // use it.
  Status reserve_scratch(size_t bytes);

  DeviceHierarchy hierarchy_;
  HierarchicalSelection selection_;
  std::shared_ptr<void> scratch_;
  size_t scratch_bytes_ = 0;
};

}  // namespace chorus
