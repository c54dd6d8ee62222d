#include "chorus/checked_file.h"

#include <cctype>

// xxHash from Debian's libxxhash-dev, compiled into this file
// (XXH_INLINE_ALL): nothing to link, so neither the installed package nor a
// user's program needs libxxhash. The format is fixed by XXH3's
// specification, whichever xxHash version built the file.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "chorus/atomic_file.h"
#include "chorus/status.h"

namespace chorus {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw Error(Status::InvalidArgument(message));
}

void append_u64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t read_u64(const std::string& bytes, size_t offset) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(bytes[offset + static_cast<size_t>(i)]);
  return value;
}

std::string capitalized(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

}  // namespace

uint64_t checksum64(const void* data, size_t size) { return XXH3_64bits(data, size); }

size_t checked_header_size(const CheckedFileFormat& format) { return format.magic.size() + 1 + 16; }

std::string seal_checked(const CheckedFileFormat& format, const std::string& payload) {
  std::string bytes;
  bytes.reserve(checked_header_size(format) + payload.size());
  bytes += format.magic;
  bytes += '\n';
  append_u64(bytes, payload.size());
  append_u64(bytes, checksum64(payload));
  bytes += payload;
  return bytes;
}

std::string open_checked(const CheckedFileFormat& format, const std::string& bytes,
                         const std::string& what) {
  const std::string magic = format.magic + "\n";
  const size_t header = checked_header_size(format);
  if (bytes.compare(0, magic.size(), magic) != 0) {
    fail(what + " is not a " + format.name + " (expected it to start with '" + format.magic + "')");
  }
  if (bytes.size() < header) {
    fail(what + " is truncated: " + std::to_string(bytes.size()) + " bytes, shorter than its " +
         std::to_string(header) + "-byte header");
  }
  const uint64_t length = read_u64(bytes, magic.size());
  const uint64_t checksum = read_u64(bytes, magic.size() + 8);
  const uint64_t actual_length = bytes.size() - header;
  if (actual_length != length) {
    fail(what + (actual_length < length ? " is truncated" : " has trailing bytes") + ": " +
         std::to_string(actual_length) + " payload bytes, expected " + std::to_string(length));
  }
  if (checksum64(bytes.data() + header, length) != checksum) {
    fail(what + " is corrupt: its payload does not match the checksum in its header");
  }
  return bytes.substr(header);
}

void write_checked_file(const std::string& path, const CheckedFileFormat& format,
                        const std::string& payload, const std::string& kind) {
  write_file_atomically(path, seal_checked(format, payload), kind);
}

std::string read_checked_file(const std::string& path, const CheckedFileFormat& format,
                              const std::string& kind) {
  return open_checked(format, read_whole_file(path, kind), capitalized(kind) + " '" + path + "'");
}

}  // namespace chorus
