#include "ops/mpi/p2p_header.h"

#include <cstring>

namespace chorus {
namespace {

constexpr uint32_t kMagic = 0x43503250;  // "P2PC"

// Both ends are builds of the same Chorus on the same kind of machine, so
// the struct travels as it is laid out.
struct Fixed {
  uint32_t magic;
  uint8_t dtype;
  uint8_t packed;
  uint16_t ndim;
  uint32_t name_bytes;
  int32_t data_tag;
  int32_t chunks;
  uint32_t reserved;
  uint64_t bytes;
};

}  // namespace

size_t p2p_header_bytes(size_t name_bytes, size_t ndim) {
  return sizeof(Fixed) + ndim * sizeof(int64_t) + name_bytes;
}

std::vector<char> encode_p2p_header(const P2PHeader& header, const void* data) {
  const size_t head = p2p_header_bytes(header.name.size(), header.shape.size());
  std::vector<char> out(head + (header.packed ? header.bytes : 0));
  Fixed fixed{kMagic,
              static_cast<uint8_t>(header.dtype),
              static_cast<uint8_t>(header.packed ? 1 : 0),
              static_cast<uint16_t>(header.shape.size()),
              static_cast<uint32_t>(header.name.size()),
              header.data_tag,
              header.chunks,
              0,
              header.bytes};
  char* at = out.data();
  std::memcpy(at, &fixed, sizeof(fixed));
  at += sizeof(fixed);
  if (!header.shape.empty()) std::memcpy(at, header.shape.data(), header.shape.size() * sizeof(int64_t));
  at += header.shape.size() * sizeof(int64_t);
  if (!header.name.empty()) std::memcpy(at, header.name.data(), header.name.size());
  at += header.name.size();
  if (header.packed && header.bytes > 0) std::memcpy(at, data, header.bytes);
  return out;
}

Status decode_p2p_header(const char* message, size_t size, P2PHeader* out, const char** packed_data) {
  Fixed fixed;
  if (size < sizeof(fixed)) {
    return Status::Internal("point-to-point header of " + std::to_string(size) + " bytes is too short");
  }
  std::memcpy(&fixed, message, sizeof(fixed));
  const size_t head = p2p_header_bytes(fixed.name_bytes, fixed.ndim);
  if (fixed.magic != kMagic || fixed.dtype >= kNumDataTypes || head > size ||
      (fixed.packed && head + fixed.bytes != size)) {
    return Status::Internal("malformed point-to-point header (" + std::to_string(size) + " bytes)");
  }
  const char* at = message + sizeof(fixed);
  out->dtype = static_cast<DataType>(fixed.dtype);
  out->shape.assign(fixed.ndim, 0);
  if (fixed.ndim > 0) std::memcpy(out->shape.data(), at, fixed.ndim * sizeof(int64_t));
  at += fixed.ndim * sizeof(int64_t);
  out->name.assign(at, fixed.name_bytes);
  at += fixed.name_bytes;
  out->bytes = fixed.bytes;
  out->packed = fixed.packed != 0;
  out->data_tag = fixed.data_tag;
  out->chunks = fixed.chunks;
  *packed_data = out->packed ? at : nullptr;
  return Status::OK();
}

}  // namespace chorus
