// The header that announces one point-to-point message (mpi_point_to_point.h):
// the sender's name, dtype and shape, and either the data itself (a small
// message travels packed in its header) or the tag of the data messages that
// follow. It is bytes on the wire: a fixed little struct, the shape, the
// name, then any packed data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

struct P2PHeader {
  std::string name;
  DataType dtype = DataType::kUInt8;
  Shape shape;
  uint64_t bytes = 0;     // of the data
  bool packed = false;    // the data follows the header in the same message
  int32_t data_tag = 0;   // not packed: the first data message's tag
  int32_t chunks = 0;     // not packed: data messages, on data_tag, data_tag + 1, ...
};

// Bytes of the header of `name` with `ndim` dimensions, without packed data.
size_t p2p_header_bytes(size_t name_bytes, size_t ndim);
// Writes `header` and, when header.packed, `header.bytes` bytes of `data`.
std::vector<char> encode_p2p_header(const P2PHeader& header, const void* data);
// Reads a header from a message of `size` bytes; `packed_data` points into
// `message` at the packed data (null when not packed). An error for a
// message that is not a well-formed header.
Status decode_p2p_header(const char* message, size_t size, P2PHeader* out, const char** packed_data);

}  // namespace chorus
