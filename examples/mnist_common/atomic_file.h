// Replacing a file so that readers see the old contents or the new, never a
// mix: train_mnist's and train_mnist_cuda's checkpoints and run summaries.
#pragma once

#include <string>

namespace train_mnist {

// Replaces `path` with `bytes` atomically (temporary file in the same folder,
// fsync, rename, fsync of the folder). Throws chorus::Error naming `path`; on
// failure the temporary file is removed and `path` is untouched.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace train_mnist
