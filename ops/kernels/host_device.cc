#include "ops/kernels/host_device.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "ops/kernels/convert.h"
#include "ops/kernels/scale.h"

namespace chorus {
namespace {

Status null_copy(size_t bytes) {
  return Status::InvalidArgument("copy: a null destination for " + std::to_string(bytes) + " bytes");
}

}  // namespace

Status HostDevice::allocate(size_t bytes, std::shared_ptr<void>* out) {
  // aligned_alloc wants a multiple of the alignment.
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* memory = std::aligned_alloc(64, rounded > 0 ? rounded : 64);
  if (memory == nullptr) return Status::Internal("Out of memory allocating " + std::to_string(bytes) + " bytes");
  out->reset(memory, std::free);
  return Status::OK();
}

Status HostDevice::copy(const std::vector<Copy>& copies) {
  for (const Copy& c : copies) {
    if (c.bytes == 0) continue;
    if (c.to == nullptr) return null_copy(c.bytes);
    if (c.from == nullptr) {
      std::memset(c.to, 0, c.bytes);
    } else if (c.from != c.to) {
      std::memcpy(c.to, c.from, c.bytes);
    }
  }
  return Status::OK();
}

Status HostDevice::scale(const void* in, void* out, int64_t count, DataType dtype, double factor) {
  return chorus::scale(in, out, count, dtype, factor);
}

Status HostDevice::divide(void* buffer, int64_t count, DataType dtype, int64_t divisor) {
  return chorus::divide(buffer, count, dtype, divisor);
}

Status HostDevice::convert(const void* in, DataType from, void* out, DataType to, int64_t count) {
  return chorus::convert(in, from, out, to, count);
}

Status HostDevice::wait(std::shared_ptr<const Event> event) {
  if (event) event->synchronize();
  return Status::OK();
}

std::shared_ptr<const Event> HostDevice::record() { return done_event(); }

Status HostDevice::to_host(void* host, const void* from, size_t bytes) {
  // A copy without a source would be a zero fill; here it is a mistake.
  if (bytes > 0 && from == nullptr) return Status::InvalidArgument("to_host: a null source for " + std::to_string(bytes) + " bytes");
  return copy({Copy{host, from, bytes}});
}

Status HostDevice::from_host(void* to, const void* host, size_t bytes) {
  if (bytes > 0 && host == nullptr) return Status::InvalidArgument("from_host: a null source for " + std::to_string(bytes) + " bytes");
  return copy({Copy{to, host, bytes}});
}

}  // namespace chorus
