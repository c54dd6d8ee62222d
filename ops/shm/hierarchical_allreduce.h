// HierarchicalAllreduce: allreduce for a job whose ranks span several hosts
// with the same number of ranks, L, on every host.
//
//   1. within each host, ShmAllreduce's shared-memory reduce-scatter: per
//      chunk, local rank r folds share r over the host's L ranks;
//   2. across hosts, local rank r of every host allreduces that share over
//      MPI, on a communicator that joins the local ranks r of all hosts
//      (its "cross" communicator): the L ranks of a host each send 1/L of the
//      data, side by side, instead of every rank sending all of it;
//   3. within each host, ShmAllreduce's shared-memory allgather.
// Step 2 runs in ShmAllreduce's after_reduce hook, on the share before it is
// published to the host: local rank r owns the same share boundaries on
// every host because every host has L ranks and chunks the message the same
// way. Shares are chunk_bytes / L bytes, so each cross-host step is one MPI
// call of that size; the chunk is larger than ShmAllreduce's default because
// each step costs a network round trip.
//
// Order of the reduction: every element is folded over the ranks of its
// host in local-rank order, then over the hosts in host order (MpiBackend on
// the cross communicator: a fixed rank order for floating-point sums and
// products on 3+ hosts; on 2 hosts either order gives the same bits),
// whatever the element's position in the message. Results are therefore the
// same on every rank and the same fused or alone, but floating-point sums
// and products differ in the last bits from the flat MPI path, which folds
// in world-rank order. float16/bfloat16 round more often than on one host:
// each host's float32 sum is rounded to 16 bits to cross hosts, the hosts'
// values are added in float32 and rounded again, and an average's factor
// is applied afterwards (HierarchicalBackend), a third rounding. Sending
// float32 partial sums instead would double the cross-host traffic.
//
// Failures: a rank whose cross-host step fails posts the error in the
// host's segment (ShmSignals::post_failure), so its local peers fail at once
// quoting it; a dead local peer is detected within milliseconds. A dead rank
// on another host is for the MPI launcher to handle: MPI does not return
// from a collective whose peer died (Open MPI 4.1 over TCP hangs there), and
// by default Open MPI ends the whole job within seconds.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "chorus/status.h"
#include "chorus/types.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_datatypes.h"
#include "ops/shm/shm_allreduce.h"
#include "ops/shm/shm_group.h"

namespace chorus {

struct HierarchicalAllreduceOptions {
  // Bytes per local rank per chunk: a multiple of 128 (see ShmAllreduce).
  // Larger than ShmAllreduce's: each cross-host step is one network round trip
  // (docs/MEASUREMENTS.md, "Hierarchical chunk size"); the segment holds 3 x L chunks.
  int64_t chunk_bytes = 2 << 20;
  // How long a rank waits for a live local peer (ShmSignals).
  std::chrono::milliseconds peer_timeout{300'000};
  // For tests: runs before each cross-host step of this rank, numbered from
  // 0 since creation; an error fails that step as an MPI error would.
  std::function<Status(int64_t step)> before_cross_step;
};

class HierarchicalAllreduce {
 public:
  // Collective over `comm`. `host`: this rank's host, 0..hosts-1, the same
  // on every rank of a host; `local_rank`: its place there, 0..L-1. Every
  // rank returns the same outcome: InvalidArgument when hosts hold
  // different numbers of ranks, an error naming the failed ranks when shared
  // memory cannot be set up on some host.
  static Status create(MPI_Comm comm, int host, int local_rank, const HierarchicalAllreduceOptions& options,
                       std::unique_ptr<HierarchicalAllreduce>* out);
  ~HierarchicalAllreduce();
  HierarchicalAllreduce(const HierarchicalAllreduce&) = delete;
  HierarchicalAllreduce& operator=(const HierarchicalAllreduce&) = delete;

  int hosts() const { return hosts_; }
  int local_size() const { return local_size_; }

  // Reduces `count` elements of every rank's `input` into `output` on every
  // rank; input may equal output. op: kSum, kMin, kMax or kProduct. Every
  // rank calls it with the same arguments in the same order. After a
  // failure every later call fails with the same error.
  Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op);

 private:
  HierarchicalAllreduce() = default;
  Status cross_step(void* share, int64_t count, DataType dtype, ReduceOp op);

  HierarchicalAllreduceOptions options_;
  int hosts_ = 1;
  int local_size_ = 1;
  int local_rank_ = 0;
  int64_t cross_steps_ = 0;
  MPI_Comm local_comm_ = MPI_COMM_NULL;
  MPI_Comm cross_comm_ = MPI_COMM_NULL;
  // Its own datatypes and ops, so that it needs nothing from the MPI
  // context; destroyed (with the communicators) before MPI is finalized.
  MpiTypes types_;
  std::unique_ptr<MpiBackend> cross_;
  std::unique_ptr<ShmGroup> group_;
  std::unique_ptr<ShmAllreduce> shm_;
};

}  // namespace chorus
