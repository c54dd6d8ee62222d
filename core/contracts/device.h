// DeviceOps: everything the executor does to a device's memory besides the
// collective itself: persistent fusion buffers and outputs, packing fused
// tensors and unpacking them, zeros for a joined rank, scaling (average,
// prescale, postscale) and 16-bit conversion. The executor never touches
// memory directly, so the same executor drives host memory and a GPU's.
//
// A device runs this work on one stream, in the order it was asked for, and
// a backend's collectives on a device go on the same stream: packing, the
// collective and unpacking need no synchronisation between them, and a
// persistent buffer is never reused before the work before it is done. On
// the host the stream is the calling thread: each call has finished when it
// returns, and every event it records is done.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "chorus/event.h"
#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

class DeviceOps {
 public:
  // One copy of a batch: `bytes` from `from` to `to`; zeros when `from` is null.
  struct Copy {
    void* to;
    const void* from;
    size_t bytes;
  };

  virtual ~DeviceOps() = default;
  virtual Device device() const = 0;

  // `bytes` of 64-byte aligned device memory, freed on this device when the
  // last owner lets go (it must not be in use by queued work then).
  virtual Status allocate(size_t bytes, std::shared_ptr<void>* out) = 0;

  // Stream work. Arguments are checked when asked for; an error in the work
  // itself shows in the next record()ed event's device, not here.
  // Copies between device buffers (packing and unpacking a fusion buffer).
  virtual Status copy(const std::vector<Copy>& copies) = 0;
  // out[i] = in[i] * factor (in may equal out); floating-point dtypes,
  // 16-bit ones computed in float32. Integer dtypes only with factor 1.
  virtual Status scale(const void* in, void* out, int64_t count, DataType dtype, double factor) = 0;
  // buffer[i] /= divisor, truncating, for integer dtypes (an integer average).
  virtual Status divide(void* buffer, int64_t count, DataType dtype, int64_t divisor) = 0;
  // out[i] = in[i] converted from `from` to `to` (float32/float64 to and
  // from float16/bfloat16, rounding to nearest even).
  virtual Status convert(const void* in, DataType from, void* out, DataType to, int64_t count) = 0;

  // The work asked for from now on starts after `event` (a producer's, or
  // another stream's) is done.
  virtual Status wait(std::shared_ptr<const Event> event) = 0;
  // An event that is done once all the work asked for so far is.
  virtual std::shared_ptr<const Event> record() = 0;

  // Host <-> device, after all the work asked for so far; return when done.
  virtual Status to_host(void* host, const void* from, size_t bytes) = 0;
  virtual Status from_host(void* to, const void* host, size_t bytes) = 0;
};

}  // namespace chorus
