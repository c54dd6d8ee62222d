// ShmGroup: the ranks of one setup channel, all on one host, sharing one
// segment: a header that proves every rank mapped the same memory, the
// control block (ShmSignals) and a data area for the algorithms.
//
// Setting it up (collective over the channel, at init):
//   1. rank 0 removes stale segments of dead jobs, creates a segment with a
//      fresh name and writes a random token into its header;
//   2. rank 0 broadcasts the name and token; the others map the segment and
//      check the token (a rank that cannot, e.g. in another mount namespace,
//      fails here instead of silently using different memory);
//   3. every rank writes its pid; all agree on success; rank 0 unlinks the
//      name, so from here on nothing is left in /dev/shm whatever happens;
//   4. every rank checks that it can see every peer's pid (the liveness
//      checks of the waits depend on it), and all agree again.
// Every rank returns the same outcome, so ranks never disagree on whether
// shared memory is in use.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "chorus/status.h"
#include "ops/setup_channel.h"
#include "ops/shm/shm_segment.h"
#include "ops/shm/shm_signals.h"

namespace chorus {

class ShmGroup {
 public:
  // `data_bytes`: the data area's size. `timeout`: how long a wait for a
  // live peer may take before it is an error (see ShmSignals).
  // `name_tag`: ends the segment's name (make_segment_name()).
  static Status create(SetupChannel& channel, size_t data_bytes, std::chrono::milliseconds timeout,
                       std::unique_ptr<ShmGroup>* out, const std::string& name_tag = "");

  int rank() const { return rank_; }
  int size() const { return size_; }
  ShmSignals& signals() { return *signals_; }
  // 128-byte aligned, data_bytes long, shared by every rank of the group.
  char* data() const { return data_; }
  size_t data_bytes() const { return data_bytes_; }

 private:
  ShmGroup() = default;
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<ShmSegment> segment_;
  std::optional<ShmSignals> signals_;
  char* data_ = nullptr;
  size_t data_bytes_ = 0;
};

}  // namespace chorus
