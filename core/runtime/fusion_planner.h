// Fusion planning: groups the cycle's ordered responses into execution units.
// Compatible allreduces (same process set, dtype, device, reduce op and scale
// factors), and likewise compatible reducescatters and allgathers, are packed
// into one unit while their total size (an allgather's: its output) stays
// within the fusion threshold. The plan depends only on the response list, so
// every rank computes the same one.
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/message.h"

namespace chorus {

using ExecutionUnit = std::vector<Response>;

// threshold_bytes == 0 disables fusion (one unit per response). A response
// larger than the threshold runs alone.
// Takes the responses by value: they are moved into the units.
std::vector<ExecutionUnit> plan_fusion(std::vector<Response> responses, int64_t threshold_bytes);

// True when b may share a fused buffer with a.
bool fusable(const Response& a, const Response& b);

}  // namespace chorus
