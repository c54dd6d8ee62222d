#include "ops/cuda/cuda_device.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "base/logging.h"
#include "ops/cuda/batched_copy.h"
#include "ops/cuda/copy_plan.h"
#include "ops/cuda/cuda_event.h"
#include "ops/cuda/elementwise.h"

namespace chorus {
namespace {

std::string cuda_error_text(cudaError_t error) {
  return std::string(cudaGetErrorString(error)) + " (" + cudaGetErrorName(error) + ")";
}

std::string device_name(int index) { return "cuda:" + std::to_string(index); }

// The host kernels' checks and messages (ops/kernels/scale.cc, convert.cc),
// made when the work is asked for: a kernel cannot report them.
Status check_buffers(const char* fn, const void* a, const void* b, int64_t count, DataType dtype) {
  if (static_cast<int>(dtype) >= kNumDataTypes) {
    return Status::InvalidArgument(std::string(fn) + ": invalid dtype " + std::to_string(static_cast<int>(dtype)));
  }
  if (count < 0) {
    return Status::InvalidArgument(std::string(fn) + ": count must not be negative, got " + std::to_string(count));
  }
  if (count > 0 && (a == nullptr || b == nullptr)) {
    return Status::InvalidArgument(std::string(fn) + ": null buffer with count " + std::to_string(count));
  }
  return Status::OK();
}

Status check_conversion(const void* in, DataType from, void* out, DataType to, int64_t count) {
  const bool known = static_cast<int>(from) < kNumDataTypes && static_cast<int>(to) < kNumDataTypes;
  if (!known || !is_floating_point(from) || !is_floating_point(to)) {
    return Status::InvalidArgument(std::string("convert: from ") + (known ? dtype_name(from) : "?") + " to " +
                                   (known ? dtype_name(to) : "?") +
                                   "; expected floating-point dtypes (float16, bfloat16, float32, float64)");
  }
  if (from == DataType::kFloat64 && (to == DataType::kFloat16 || to == DataType::kBFloat16)) {
    return Status::InvalidArgument(std::string("convert: from float64 to ") + dtype_name(to) +
                                   " would round twice (through float32); convert to float32 first");
  }
  if (count < 0) return Status::InvalidArgument("convert: negative count " + std::to_string(count));
  if (count > 0 && (in == nullptr || out == nullptr)) {
    return Status::InvalidArgument("convert: null buffer with count " + std::to_string(count));
  }
  return Status::OK();
}

bool overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto a_begin = reinterpret_cast<uintptr_t>(a);
  const auto b_begin = reinterpret_cast<uintptr_t>(b);
  return a_begin < b_begin + b_bytes && b_begin < a_begin + a_bytes;
}

// The deleter of allocate()'s memory. It may run on any thread (a framework
// thread dropping the last reference), so it puts back the device that
// thread had current.
void free_on_device(int index, void* memory) {
  int current = -1;
  const bool had_current = cudaGetDevice(&current) == cudaSuccess;
  if (current != index) cudaSetDevice(index);
  const cudaError_t freed = cudaFree(memory);
  if (had_current && current != index) cudaSetDevice(current);
  // At process exit the runtime may be unloaded before the last buffer goes.
  if (freed != cudaSuccess && freed != cudaErrorCudartUnloading) {
    CHORUS_LOG(kWarning, "cudaFree on " << device_name(index) << " failed: " << cuda_error_text(freed));
  }
}

}  // namespace

Status cuda_status(const char* what, cudaError_t error) {
  if (error == cudaSuccess) return Status::OK();
  return Status::Internal(std::string(what) + " failed: " + cuda_error_text(error));
}

Status CudaDevice::create(int index, std::unique_ptr<CudaDevice>* out) {
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) {
    return Status::PreconditionFailed("no CUDA device " + device_name(index) +
                                      " (none visible: cudaGetDeviceCount failed: " + cuda_error_text(counted) + ")");
  }
  if (count == 0) return Status::PreconditionFailed("no CUDA device " + device_name(index) + " (0 visible)");
  if (index < 0 || index >= count) {
    return Status::InvalidArgument("no CUDA device " + device_name(index) + " (" + std::to_string(count) +
                                   " visible: cuda:0 to " + device_name(count - 1) + ")");
  }
  const std::string where = " on " + device_name(index);
  CHORUS_RETURN_IF_ERROR(cuda_status(("cudaSetDevice" + where).c_str(), cudaSetDevice(index)));
  cudaStream_t stream = nullptr;
  CHORUS_RETURN_IF_ERROR(cuda_status(("cudaStreamCreateWithFlags(cudaStreamNonBlocking)" + where).c_str(),
                                     cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
  out->reset(new CudaDevice(index, stream));
  return Status::OK();
}

// Work still queued finishes first: CUDA releases the stream after it.
CudaDevice::~CudaDevice() {
  cudaSetDevice(index_);
  cudaStreamDestroy(stream_);
}

Status CudaDevice::use_device() const { return checked("cudaSetDevice", cudaSetDevice(index_)); }

Status CudaDevice::checked(const std::string& what, cudaError_t error) const {
  if (error == cudaSuccess) return Status::OK();
  return cuda_status((what + " on " + device_name(index_)).c_str(), error);
}

Status CudaDevice::allocate(size_t bytes, std::shared_ptr<void>* out) {
  CHORUS_RETURN_IF_ERROR(use_device());
  void* memory = nullptr;
  // cudaMalloc aligns to 256 bytes at least; zero bytes would give no pointer.
  CHORUS_RETURN_IF_ERROR(
      checked("cudaMalloc(" + std::to_string(bytes) + " bytes)", cudaMalloc(&memory, bytes > 0 ? bytes : 1)));
  if (reinterpret_cast<uintptr_t>(memory) % 64 != 0) {
    cudaFree(memory);
    return Status::Internal("cudaMalloc(" + std::to_string(bytes) + " bytes) on " + device_name(index_) +
                            " returned memory not aligned to 64 bytes");
  }
  const int index = index_;
  out->reset(memory, [index](void* p) { free_on_device(index, p); });
  return Status::OK();
}

Status CudaDevice::copy(const std::vector<Copy>& copies) {
  std::vector<CopyLaunch> launches;
  CHORUS_RETURN_IF_ERROR(plan_copies(copies, cuda_copy_limits(), &launches));
  if (launches.empty()) return Status::OK();
  CHORUS_RETURN_IF_ERROR(use_device());
  for (const CopyLaunch& launch : launches) {
    CHORUS_RETURN_IF_ERROR(checked("batched copy of " + std::to_string(launch.pieces.size()) + " pieces (" +
                                       std::to_string(launch.blocks) + " blocks)",
                                   launch_batched_copy(launch, stream_)));
  }
  return Status::OK();
}

Status CudaDevice::scale(const void* in, void* out, int64_t count, DataType dtype, double factor) {
  CHORUS_RETURN_IF_ERROR(check_buffers("scale", in, out, count, dtype));
  if (factor == 1.0 && !is_floating_point(dtype)) {
    return copy({Copy{out, in, static_cast<size_t>(count) * dtype_size(dtype)}});
  }
  if (dtype == DataType::kBool) {
    return Status::InvalidArgument("scale: dtype 'bool' can only be scaled by 1, got " + std::to_string(factor));
  }
  if (!is_floating_point(dtype) && !std::isfinite(factor)) {
    return Status::InvalidArgument("scale: an integer tensor needs a finite factor, got " + std::to_string(factor));
  }
  if (count == 0) return Status::OK();
  CHORUS_RETURN_IF_ERROR(use_device());
  return checked(std::string("scale kernel (") + dtype_name(dtype) + ")",
                 launch_scale(in, out, count, dtype, factor, stream_));
}

Status CudaDevice::divide(void* buffer, int64_t count, DataType dtype, int64_t divisor) {
  CHORUS_RETURN_IF_ERROR(check_buffers("divide", buffer, buffer, count, dtype));
  if (divisor <= 0) return Status::InvalidArgument("divide: divisor must be positive, got " + std::to_string(divisor));
  if (dtype == DataType::kBool) return Status::InvalidArgument("divide: dtype 'bool' cannot be divided");
  // As on the host: a floating average multiplies by 1/divisor.
  if (is_floating_point(dtype)) return scale(buffer, buffer, count, dtype, 1.0 / static_cast<double>(divisor));
  if (count == 0) return Status::OK();
  CHORUS_RETURN_IF_ERROR(use_device());
  return checked(std::string("divide kernel (") + dtype_name(dtype) + ")",
                 launch_divide(buffer, count, dtype, divisor, stream_));
}

Status CudaDevice::convert(const void* in, DataType from, void* out, DataType to, int64_t count) {
  CHORUS_RETURN_IF_ERROR(check_conversion(in, from, out, to, count));
  if (count == 0 || (from == to && in == out)) return Status::OK();
  const size_t in_bytes = static_cast<size_t>(count) * dtype_size(from);
  const size_t out_bytes = static_cast<size_t>(count) * dtype_size(to);
  const bool overlapping = overlap(in, in_bytes, out, out_bytes);
  if (from == to && !overlapping) return copy({Copy{out, in, out_bytes}});
  CHORUS_RETURN_IF_ERROR(use_device());
  const std::string what = std::string("convert kernel (") + dtype_name(from) + " to " + dtype_name(to) + ")";
  // In place with one width, each element is read before it is written; any
  // other overlap (widening a wire buffer in place) would overwrite elements
  // that other threads have not read yet.
  if (!overlapping || (in == out && in_bytes == out_bytes)) {
    return checked(what, launch_convert(in, from, out, to, count, stream_));
  }
  return with_staged_input(in, in_bytes, [&](const void* staged) {
    if (from == to) {
      return checked("cudaMemcpyAsync(device to device)",
                     cudaMemcpyAsync(out, staged, out_bytes, cudaMemcpyDeviceToDevice, stream_));
    }
    return checked(what, launch_convert(staged, from, out, to, count, stream_));
  });
}

Status CudaDevice::with_staged_input(const void* in, size_t bytes, const std::function<Status(const void*)>& work) {
  void* scratch = nullptr;
  CHORUS_RETURN_IF_ERROR(
      checked("cudaMallocAsync(" + std::to_string(bytes) + " bytes)", cudaMallocAsync(&scratch, bytes, stream_)));
  Status status = checked("cudaMemcpyAsync(device to device)",
                          cudaMemcpyAsync(scratch, in, bytes, cudaMemcpyDeviceToDevice, stream_));
  if (status.ok()) status = work(scratch);
  const Status freed = checked("cudaFreeAsync", cudaFreeAsync(scratch, stream_));
  return status.ok() ? freed : status;
}

Status CudaDevice::wait(std::shared_ptr<const Event> event) {
  if (!event) return Status::OK();
  if (const auto* cuda_event = dynamic_cast<const CudaEvent*>(event.get())) {
    CHORUS_RETURN_IF_ERROR(use_device());
    return checked("cudaStreamWaitEvent", cudaStreamWaitEvent(stream_, cuda_event->get(), 0));
  }
  // Another kind of event (host memory's, which is done, or a foreign
  // device's): a stream can only wait for CUDA events, so the host waits
  // here, before anything later is queued. Queuing the wait on the stream
  // instead (cudaLaunchHostFunc blocking in event->synchronize()) would park
  // CUDA's one callback thread, stalling every stream's callbacks in the
  // process, and a callback must not call CUDA, which an event of another
  // CUDA-based framework may well do.
  if (!event->done()) event->synchronize();
  return Status::OK();
}

std::shared_ptr<const Event> CudaDevice::record() {
  std::shared_ptr<const CudaEvent> event;
  Status status = use_device();
  if (status.ok()) status = CudaEvent::record(stream_, &event);
  if (status.ok()) return event;
  // record() has no error to return. Rather than hand back an event that
  // would never complete, wait for the stream here: the event returned is
  // then truthfully done. Whatever failed fails the stream's next call too.
  CHORUS_LOG(kError, "recording an event on " << device_name(index_) << " failed (" << status.message()
                                              << "); waiting for the stream on the host instead");
  const Status waited = checked("cudaStreamSynchronize", cudaStreamSynchronize(stream_));
  if (!waited.ok()) CHORUS_LOG(kError, waited.message());
  return done_event();
}

// The copy goes on the stream, after the work asked for so far, and only
// this stream is waited for: a device-wide synchronize would also wait for
// the framework's compute.
Status CudaDevice::to_host(void* host, const void* from, size_t bytes) {
  if (bytes == 0) return Status::OK();
  if (from == nullptr) return Status::InvalidArgument("to_host: a null source for " + std::to_string(bytes) + " bytes");
  if (host == nullptr) return Status::InvalidArgument("to_host: a null destination for " + std::to_string(bytes) + " bytes");
  CHORUS_RETURN_IF_ERROR(use_device());
  CHORUS_RETURN_IF_ERROR(checked("cudaMemcpyAsync(" + std::to_string(bytes) + " bytes, device to host)",
                                 cudaMemcpyAsync(host, from, bytes, cudaMemcpyDeviceToHost, stream_)));
  return checked("cudaStreamSynchronize", cudaStreamSynchronize(stream_));
}

Status CudaDevice::from_host(void* to, const void* host, size_t bytes) {
  if (bytes == 0) return Status::OK();
  if (host == nullptr) return Status::InvalidArgument("from_host: a null source for " + std::to_string(bytes) + " bytes");
  if (to == nullptr) return Status::InvalidArgument("from_host: a null destination for " + std::to_string(bytes) + " bytes");
  CHORUS_RETURN_IF_ERROR(use_device());
  CHORUS_RETURN_IF_ERROR(checked("cudaMemcpyAsync(" + std::to_string(bytes) + " bytes, host to device)",
                                 cudaMemcpyAsync(to, host, bytes, cudaMemcpyHostToDevice, stream_)));
  return checked("cudaStreamSynchronize", cudaStreamSynchronize(stream_));
}

}  // namespace chorus
