// A checksummed container for bytes that must come back exactly: a format
// line naming what the file is, the payload's length and its xxHash
// (XXH3, 64 bits), then the payload. Reading checks all three before the
// caller parses anything, so a truncated, corrupt or foreign file is named as
// such instead of failing somewhere inside a parser. chorus::torch's
// checkpoints are such files; a program can seal its own state the same way.
//
// Layout: "<magic>\n", u64 payload length, u64 XXH3-64 of the payload (both
// little-endian), payload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace chorus {

// XXH3 64-bit hash of `size` bytes (seed 0): checksums and parameter digests.
uint64_t checksum64(const void* data, size_t size);
inline uint64_t checksum64(const std::string& bytes) { return checksum64(bytes.data(), bytes.size()); }

// What kind of checked file a reader expects.
struct CheckedFileFormat {
  std::string magic;  // the first line, without '\n' (e.g. "CHORUS-TORCH-CHECKPOINT 1")
  std::string name;   // for messages (e.g. "Chorus checkpoint")
};

// The file's bytes: header + payload.
std::string seal_checked(const CheckedFileFormat& format, const std::string& payload);

// The payload of `bytes`, verified. `what` names the source in messages
// (e.g. "Checkpoint '/ckpt/last.ckpt'"). Throws chorus::Error when the bytes
// do not start with the format's magic ("... is not a <name> (expected it to
// start with '<magic>')"), are shorter than the header or than the length it
// gives ("... is truncated"), longer ("... has trailing bytes"), or do not
// match the checksum ("... is corrupt").
std::string open_checked(const CheckedFileFormat& format, const std::string& bytes,
                         const std::string& what);

// The header's size for `format` (magic line + 16 bytes).
size_t checked_header_size(const CheckedFileFormat& format);

// seal_checked + write_file_atomically (kind: `kind`).
void write_checked_file(const std::string& path, const CheckedFileFormat& format,
                        const std::string& payload, const std::string& kind = "file");
// read_whole_file + open_checked, with what = "<Kind> '<path>'".
std::string read_checked_file(const std::string& path, const CheckedFileFormat& format,
                              const std::string& kind = "file");

}  // namespace chorus
