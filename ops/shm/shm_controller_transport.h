// The negotiation primitives for a job whose ranks share one host: the
// steady state's bit-vector OR, run every cycle, goes through a shared
// segment; the rarer gather and broadcast of full messages go to the MPI
// transport it wraps.
//
// Over MPI the OR was a large part of the time from a training step's last
// gradient to its agreed response list (docs/MEASUREMENTS.md, "Negotiation
// through shared memory"); here each rank writes its vector into its own
// slot, posts, waits for the others (ShmSignals: poll, then sleep; a dead
// peer is an error naming it) and ORs the slots. Two sets of slots, used by
// alternate calls: a rank writes a set again only two calls later, after
// every rank has posted the call in between, i.e. finished reading it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "protocol/controller_transport.h"
#include "ops/shm/shm_group.h"

namespace chorus {

class ShmControllerTransport : public ControllerTransport {
 public:
  // The data area a group needs for `ranks` ranks and vectors of up to
  // `max_words` words.
  static size_t data_bytes(int ranks, size_t max_words);

  // `group`: the same ranks as `wrapped`, with data_bytes() of data. Longer
  // vectors than `max_words` (the same length on every rank) take the
  // wrapped transport.
  ShmControllerTransport(std::unique_ptr<ControllerTransport> wrapped, std::unique_ptr<ShmGroup> group,
                         size_t max_words);

  int rank() const override { return wrapped_->rank(); }
  int size() const override { return wrapped_->size(); }
  Status allreduce_or(std::vector<uint64_t>* bits) override;
  Status gather_to_coordinator(const std::string& mine, std::vector<std::string>* all) override {
    return wrapped_->gather_to_coordinator(mine, all);
  }
  Status broadcast_from_coordinator(std::string* blob) override {
    return wrapped_->broadcast_from_coordinator(blob);
  }

 private:
  uint64_t* slot(uint64_t call, int rank) const;

  std::unique_ptr<ControllerTransport> wrapped_;
  std::unique_ptr<ShmGroup> group_;
  size_t max_words_;
};

}  // namespace chorus
