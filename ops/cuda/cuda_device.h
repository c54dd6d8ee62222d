// CudaDevice: DeviceOps for one GPU. All its work (packing, zeroing,
// scaling, conversion) and the collectives of the backends that use it go on
// one stream of its own, created non-blocking so that the legacy default
// stream never serialises it; completion is learnt through events, never
// through a device-wide synchronize. Memory comes from cudaMalloc, kept as
// persistent buffers by the executor.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "contracts/device.h"

namespace chorus {

// OK, or Internal("<what> failed: <CUDA error string> (<error name>)").
Status cuda_status(const char* what, cudaError_t error);

class CudaDevice : public DeviceOps {
 public:
  // Makes the stream on GPU `index` (and makes `index` the calling thread's
  // current device). Errors name the index and the number of GPUs present.
  static Status create(int index, std::unique_ptr<CudaDevice>* out);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  Device device() const override { return Device::cuda(index_); }
  int index() const { return index_; }
  cudaStream_t stream() const { return stream_; }

  Status allocate(size_t bytes, std::shared_ptr<void>* out) override;
  Status copy(const std::vector<Copy>& copies) override;
  Status scale(const void* in, void* out, int64_t count, DataType dtype, double factor) override;
  Status divide(void* buffer, int64_t count, DataType dtype, int64_t divisor) override;
  Status convert(const void* in, DataType from, void* out, DataType to, int64_t count) override;
  Status wait(std::shared_ptr<const Event> event) override;
  std::shared_ptr<const Event> record() override;
  Status to_host(void* host, const void* from, size_t bytes) override;
  Status from_host(void* to, const void* host, size_t bytes) override;

 private:
  CudaDevice(int index, cudaStream_t stream) : index_(index), stream_(stream) {}
  // Makes this GPU the calling thread's current device: every call does,
  // since the thread calling (the background thread, a test) may have made
  // another one current.
  Status use_device() const;
  // cuda_status naming this device: "<what> on cuda:<index> failed: ...".
  Status checked(const std::string& what, cudaError_t error) const;
  // Copies `bytes` of `in` into scratch memory on the stream (allocated and
  // freed in stream order, so nothing waits) and queues `work` to read it:
  // for conversions whose input and output overlap, which no parallel
  // kernel can do in place.
  Status with_staged_input(const void* in, size_t bytes, const std::function<Status(const void*)>& work);

  int index_;
  cudaStream_t stream_;
};

}  // namespace chorus
