// Text messages between ranks over Chorus's own transport, for the search's
// jobs and reports (docs/TUNE.md, "Groups over process sets"). A message is
// two tensors under one name: its length (int64 [1]), then its bytes (uint8
// [length]), so the receiver can size its buffer. Messages of one name
// between two ranks arrive in the order they were sent (point-to-point), and
// a broadcast is one collective per tensor on the set.
#pragma once

#include <string>

#include "chorus/process_set.h"

namespace chorus {
namespace tune {

// Point-to-point (chorus::send/recv): blocking; throw chorus::Error when the
// peer died or the runtime stopped.
void send_text(const std::string& name, const std::string& text, int dest_rank);
std::string recv_text(const std::string& name, int source_rank);

// Collective over `set`: every member calls it; `root_rank` (a rank of the
// job, a member of the set) passes the text, the others get it.
std::string broadcast_text(const std::string& name, const std::string& text, int root_rank,
                           const ProcessSet& set);

}  // namespace tune
}  // namespace chorus
