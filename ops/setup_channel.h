// SetupChannel: what a transport needs from the other ranks of its group
// while it sets itself up (NCCL calls it a bootstrap, Gloo a rendezvous
// store): who the ranks are, and a broadcast and an allgather of a few
// bytes. The shared-memory transport sets itself up through it, so it knows
// nothing of MPI; MPI provides it today (ops/mpi/mpi_setup_channel.h).
// Setup is collective: every rank of the group makes the same calls in the
// same order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {

class SetupChannel {
 public:
  virtual ~SetupChannel() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank's rank in the job, by which messages name it (a group may be
  // the ranks of one host only).
  virtual int job_rank() const = 0;
  // `bytes` of root's `data` into every rank's `data`.
  virtual Status broadcast(void* data, size_t bytes, int root) = 0;
  // Every rank's `bytes` of `mine`, in rank order, into `all` (size() x bytes).
  virtual Status allgather(const void* mine, size_t bytes, void* all) = 0;
};

// Collective: the ranks of the channel (in its numbering, ascending) where
// `mine` is not OK; empty when it is OK everywhere.
Status gather_failed_ranks(SetupChannel& channel, const Status& mine, std::vector<int>* failed);
// "0, 2": failed ranks as the set-up errors list them.
std::string rank_list_text(const std::vector<int>& ranks);

// Collective: OK when `mine` is OK on every rank of the channel; else this
// rank's own error, or an error saying that `subject` could not be set up
// because `step` failed on the ranks named.
Status agree_on_setup(SetupChannel& channel, const Status& mine, const std::string& step,
                      const std::string& subject = "Shared memory");

}  // namespace chorus
