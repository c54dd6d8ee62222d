// Files that readers see whole or not at all: checkpoints, run summaries,
// any state a restarted job reads back. Torch-free, so that programs without
// LibTorch (train_mnist_cuda, the launcher) use the same code as
// chorus::torch's checkpoints.
#pragma once

#include <string>

namespace chorus {

// Replaces `path` with `bytes` atomically: a temporary file in the same
// folder is written, flushed to disk (fsync), renamed over `path`, and the
// folder is fsynced so the rename survives a crash. Readers see the old
// contents or the new, never a mix. Throws chorus::Error naming `path` (as
// "Cannot write <kind> '<path>'") and the step that failed; the temporary
// file is then removed and `path` is untouched. Any rank may call it, for
// any folder (e.g. one per rank); it is not a collective.
void write_file_atomically(const std::string& path, const std::string& bytes,
                           const std::string& kind = "file");

// The whole contents of `path`. Throws chorus::Error ("Cannot open <kind>
// '<path>': <reason>") when it cannot be opened or read.
std::string read_whole_file(const std::string& path, const std::string& kind = "file");

}  // namespace chorus
