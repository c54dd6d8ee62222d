// copy_streaming: a memcpy whose stores bypass the caches (non-temporal
// stores), for data that another core reads next from a line this core
// rewrites again and again.
//
// The shared-memory allreduce rewrites each slot a few chunks after a peer
// has read it, while that peer still holds the lines: an ordinary store then
// first fetches the line and invalidates the peer's copy, one cross-core
// round trip per line. A streaming store writes the whole line without
// fetching it, which made large messages faster. On data that the reader
// finds in a cache otherwise (a training step's 400 KiB gradient, whose
// slots sit idle between steps) it is slower (docs/MEASUREMENTS.md,
// "Streaming stores into reused slots").
#pragma once

#include <cstddef>

namespace chorus {

// Copies `bytes` bytes; the buffers must not overlap. Before another thread
// or process may rely on seeing the copy, call streaming_stores_done().
void copy_streaming(void* to, const void* from, size_t bytes);

// Orders every earlier streaming store before the stores that follow (an
// sfence; nothing where copy_streaming is a plain memcpy).
void streaming_stores_done();

}  // namespace chorus
