// chorus_gpu_pack_bench [--repeats N] [--device I]
//
// For each case (N tensors of one size, float32), times on the device's
// stream with CUDA events: packing the tensors into a fusion buffer with one
// CudaDevice::copy, unpacking them back, and one cudaMemcpyAsync (device to
// device) of the same total bytes. Prints one line per case and direction:
//   pack_bandwidth case=<pack|unpack>_<N>x<size> chorus_gbps=<x> memcpy_gbps=<y> ratio=<x/y>
// (GB/s of payload, 1e9 bytes). Packing and unpacking are checked once
// against the expected bytes first. Exits 2 when no GPU can be used.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ops/cuda/cuda_device.h"

namespace {

using chorus::CudaDevice;
using chorus::DeviceOps;
using chorus::Status;

struct Case {
  const char* name;
  size_t tensors;
  size_t bytes;  // per tensor
};

// Fusion-sized batches of typical gradients; many small tensors (where one
// launch instead of one copy each matters most); tensors whose slots are
// only 4-byte aligned relative to them (an odd number of floats each); one
// large tensor.
const Case kCases[] = {
    {"200x256KiB", 200, 256 << 10},      {"64x1MiB", 64, 1 << 20},  {"2000x4KiB", 2000, 4 << 10},
    {"200x256KiB+4B", 200, (256 << 10) + 4}, {"1x64MiB", 1, 64 << 20},
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "pack_bandwidth: error: %s\n", what.c_str());
  std::exit(1);
}

void check(const Status& status) {
  if (!status.ok()) fail(status.to_string());
}

void check(cudaError_t error, const char* what) { check(chorus::cuda_status(what, error)); }

uint8_t pattern(size_t tensor, size_t i) { return static_cast<uint8_t>(tensor * 131 + i * 7 + 1); }

class Timer {
 public:
  explicit Timer(cudaStream_t stream) : stream_(stream) {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~Timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  // Milliseconds per call of `work`, over `repeats` calls after a few unmeasured ones.
  template <typename Work>
  double per_call_ms(int repeats, Work work) {
    for (int i = 0; i < 3; ++i) work();
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    for (int i = 0; i < repeats; ++i) work();
    check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms / repeats;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

void run_case(CudaDevice& device, const Case& c, int repeats) {
  const size_t total = c.tensors * c.bytes;
  std::vector<std::shared_ptr<void>> tensors(c.tensors);
  std::shared_ptr<void> buffer, reference;
  for (size_t t = 0; t < c.tensors; ++t) {
    check(device.allocate(c.bytes, &tensors[t]));
    std::vector<uint8_t> values(c.bytes);
    for (size_t i = 0; i < c.bytes; ++i) values[i] = pattern(t, i);
    check(device.from_host(tensors[t].get(), values.data(), c.bytes));
  }
  check(device.allocate(total, &buffer));
  check(device.allocate(total, &reference));
  std::vector<DeviceOps::Copy> pack, unpack, zero;
  for (size_t t = 0; t < c.tensors; ++t) {
    char* slot = static_cast<char*>(buffer.get()) + t * c.bytes;
    pack.push_back({slot, tensors[t].get(), c.bytes});
    unpack.push_back({tensors[t].get(), slot, c.bytes});
    zero.push_back({tensors[t].get(), nullptr, c.bytes});
  }

  // The bytes are right before they are timed: packed, then unpacked into
  // tensors zeroed in between.
  check(device.copy(pack));
  std::vector<uint8_t> packed(total);
  check(device.to_host(packed.data(), buffer.get(), total));
  for (size_t t = 0; t < c.tensors; ++t) {
    for (size_t i = 0; i < c.bytes; ++i) {
      if (packed[t * c.bytes + i] != pattern(t, i)) fail(std::string("case ") + c.name + ": packing is wrong");
    }
  }
  check(device.copy(zero));
  check(device.copy(unpack));
  std::vector<uint8_t> unpacked(c.bytes);
  for (size_t t = 0; t < c.tensors; ++t) {
    check(device.to_host(unpacked.data(), tensors[t].get(), c.bytes));
    for (size_t i = 0; i < c.bytes; ++i) {
      if (unpacked[i] != pattern(t, i)) fail(std::string("case ") + c.name + ": unpacking is wrong");
    }
  }

  Timer timer(device.stream());
  const double memcpy_ms = timer.per_call_ms(repeats, [&] {
    check(cudaMemcpyAsync(buffer.get(), reference.get(), total, cudaMemcpyDeviceToDevice, device.stream()),
          "cudaMemcpyAsync");
  });
  const double pack_ms = timer.per_call_ms(repeats, [&] { check(device.copy(pack)); });
  const double unpack_ms = timer.per_call_ms(repeats, [&] { check(device.copy(unpack)); });
  const auto gbps = [&](double ms) { return static_cast<double>(total) / (ms * 1e-3) / 1e9; };
  for (const auto& [direction, ms] : {std::make_pair("pack", pack_ms), std::make_pair("unpack", unpack_ms)}) {
    std::printf("pack_bandwidth case=%s_%s chorus_gbps=%.1f memcpy_gbps=%.1f ratio=%.3f\n", direction, c.name, gbps(ms),
                gbps(memcpy_ms), memcpy_ms / ms);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 50;
  int index = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--repeats" || arg == "--device") && i + 1 < argc) {
      (arg == "--repeats" ? repeats : index) = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--repeats N] [--device I]\n", argv[0]);
      return 2;
    }
  }
  if (repeats < 1) repeats = 1;
  std::unique_ptr<CudaDevice> device;
  const Status created = CudaDevice::create(index, &device);
  if (!created.ok()) {
    std::fprintf(stderr, "pack_bandwidth: no GPU to measure on: %s\n", created.message().c_str());
    return 2;
  }
  for (const Case& c : kCases) run_case(*device, c, repeats);
  return 0;
}
