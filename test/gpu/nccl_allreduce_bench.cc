// chorus_gpu_allreduce_bench: Chorus's allreduce of a GPU tensor (the
// public API: chorus::init, chorus::allreduce on a Tensor on
// Device::cuda(i), which the NCCL backend runs) against a bare ncclAllReduce
// on a communicator of its own, in the same run on the same GPU.
//
//   mpirun -np 1 chorus_gpu_allreduce_bench [--bytes N] [--iterations N] [--warmup N]
//
// Both sides sum a float32 buffer of `bytes` (64 MiB by default) of ones
// into a second buffer (out of place, so that one rank's "allreduce" is a
// real 64 MiB device copy on both sides, not a no-op), `iterations` times
// after `warmup` untimed ones, and each iteration is timed the same way: from
// the call until the host knows the result is there (chorus::allreduce
// returns when its handle is done; the bare side synchronizes its stream),
// over steady_clock. The bare side's device time (CUDA events around its
// launches) is printed too. Both results are checked (every element = the
// number of ranks). Prints
//   nccl_allreduce bytes=<n> chorus_us=<x> nccl_us=<y> ratio=<y/x>
// (times per iteration, in microseconds; ratio 1 means Chorus adds nothing).
// Rank r uses cuda:r (one host). Exits non-zero, saying why, without a GPU
// per rank or when the build's runtime has no backend for GPU tensors.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "chorus/chorus.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  size_t bytes = size_t{64} << 20;
  int iterations = 50;
  int warmup = 5;
};

[[noreturn]] void fail(int rank, const std::string& message, int code = 1) {
  std::fprintf(stderr, "chorus_gpu_allreduce_bench (rank %d): %s\n", rank, message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

void check_cuda(int rank, const char* what, cudaError_t error) {
  if (error != cudaSuccess) fail(rank, std::string(what) + " failed: " + cudaGetErrorString(error));
}
void check_nccl(int rank, const char* what, ncclResult_t result) {
  if (result != ncclSuccess) fail(rank, std::string(what) + " failed: " + ncclGetErrorString(result));
}

Options parse(int argc, char** argv, int rank) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) fail(rank, "option " + arg + " needs a value", 2);
    const long long value = std::atoll(argv[++i]);
    if (value <= 0) fail(rank, "option " + arg + " needs a positive value, got '" + argv[i] + "'", 2);
    if (arg == "--bytes") {
      options.bytes = static_cast<size_t>(value) / sizeof(float) * sizeof(float);
    } else if (arg == "--iterations") {
      options.iterations = static_cast<int>(value);
    } else if (arg == "--warmup") {
      options.warmup = static_cast<int>(value);
    } else {
      fail(rank, "unknown option " + arg + " (expected --bytes, --iterations, --warmup)", 2);
    }
  }
  return options;
}

// Every element equals `value`.
void expect_all(int rank, const char* who, const float* device, size_t count, float value) {
  std::vector<float> host(count);
  check_cuda(rank, "cudaMemcpy (device to host)", cudaMemcpy(host.data(), device, count * sizeof(float),
                                                              cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; ++i) {
    if (host[i] != value) {
      fail(rank, std::string(who) + ": element " + std::to_string(i) + " is " + std::to_string(host[i]) +
                     ", expected " + std::to_string(value));
    }
  }
}

void fill_ones(int rank, float* device, size_t count) {
  const std::vector<float> ones(count, 1.0f);
  check_cuda(rank, "cudaMemcpy (host to device)",
             cudaMemcpy(device, ones.data(), count * sizeof(float), cudaMemcpyHostToDevice));
}

// Microseconds per iteration of Chorus's blocking allreduce.
double time_chorus(int rank, int gpu, const float* input, float* output, size_t count, const Options& options) {
  const chorus::Shape shape{static_cast<int64_t>(count)};
  const chorus::Tensor in(const_cast<float*>(input), chorus::DataType::kFloat32, shape, chorus::Device::cuda(gpu));
  const chorus::Tensor out(output, chorus::DataType::kFloat32, shape, chorus::Device::cuda(gpu));
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  try {
    for (int i = 0; i < options.warmup; ++i) chorus::allreduce("bench.gradient", in, out, sum);
    const auto began = Clock::now();
    for (int i = 0; i < options.iterations; ++i) chorus::allreduce("bench.gradient", in, out, sum);
    const std::chrono::duration<double, std::micro> took = Clock::now() - began;
    return took.count() / options.iterations;
  } catch (const chorus::Error& error) {
    fail(rank, std::string("chorus::allreduce failed: ") + error.what());
  }
}

// Microseconds per iteration of ncclAllReduce + cudaStreamSynchronize, and
// the device's own time per launch (CUDA events).
double time_nccl(int rank, int size, int gpu, const float* input, float* output, size_t count,
                 const Options& options, double* device_us) {
  ncclUniqueId id;
  if (rank == 0) check_nccl(rank, "ncclGetUniqueId", ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  check_cuda(rank, "cudaSetDevice", cudaSetDevice(gpu));
  ncclComm_t comm;
  check_nccl(rank, "ncclCommInitRank", ncclCommInitRank(&comm, size, id, rank));
  cudaStream_t stream;
  check_cuda(rank, "cudaStreamCreate", cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const auto step = [&] {
    check_nccl(rank, "ncclAllReduce", ncclAllReduce(input, output, count, ncclFloat32, ncclSum, comm, stream));
    check_cuda(rank, "cudaStreamSynchronize", cudaStreamSynchronize(stream));
  };
  for (int i = 0; i < options.warmup; ++i) step();
  const auto began = Clock::now();
  for (int i = 0; i < options.iterations; ++i) step();
  const std::chrono::duration<double, std::micro> took = Clock::now() - began;

  cudaEvent_t start, stop;
  check_cuda(rank, "cudaEventCreate", cudaEventCreate(&start));
  check_cuda(rank, "cudaEventCreate", cudaEventCreate(&stop));
  check_cuda(rank, "cudaEventRecord", cudaEventRecord(start, stream));
  for (int i = 0; i < options.iterations; ++i) {
    check_nccl(rank, "ncclAllReduce", ncclAllReduce(input, output, count, ncclFloat32, ncclSum, comm, stream));
  }
  check_cuda(rank, "cudaEventRecord", cudaEventRecord(stop, stream));
  check_cuda(rank, "cudaEventSynchronize", cudaEventSynchronize(stop));
  float ms = 0;
  check_cuda(rank, "cudaEventElapsedTime", cudaEventElapsedTime(&ms, start, stop));
  *device_us = 1000.0 * ms / options.iterations;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
  return took.count() / options.iterations;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) fail(rank, "MPI does not provide MPI_THREAD_MULTIPLE, which Chorus needs");
  const Options options = parse(argc, argv, rank);

  int gpus = 0;
  const cudaError_t counted = cudaGetDeviceCount(&gpus);
  if (counted != cudaSuccess || gpus == 0) {
    fail(rank, std::string("no CUDA GPU is visible (") +
                   (counted != cudaSuccess ? cudaGetErrorString(counted) : "0 devices") +
                   "): this benchmark measures GPU allreduces and needs one GPU per rank", 3);
  }
  if (rank >= gpus) {
    fail(rank, std::to_string(size) + " ranks but " + std::to_string(gpus) +
                   " GPU(s): rank r uses cuda:r, and NCCL refuses two ranks on one GPU", 3);
  }
  const int gpu = rank;
  check_cuda(rank, "cudaSetDevice", cudaSetDevice(gpu));
  const size_t count = options.bytes / sizeof(float);
  float* input = nullptr;
  float* output = nullptr;
  check_cuda(rank, "cudaMalloc", cudaMalloc(&input, count * sizeof(float)));
  check_cuda(rank, "cudaMalloc", cudaMalloc(&output, count * sizeof(float)));
  fill_ones(rank, input, count);

  try {
    chorus::init();
  } catch (const chorus::Error& error) {
    fail(rank, std::string("chorus::init failed: ") + error.what());
  }
  if (!chorus::supports(chorus::Device::cuda(gpu))) {
    fail(rank, "this build's Chorus runtime has no backend for tensors on cuda:" + std::to_string(gpu) +
                   " (is the NCCL backend registered in MpiCommunication::start?)", 4);
  }
  const float ranks = static_cast<float>(size);
  check_cuda(rank, "cudaMemset", cudaMemset(output, 0, count * sizeof(float)));
  const double chorus_us = time_chorus(rank, gpu, input, output, count, options);
  expect_all(rank, "Chorus's sum", output, count, ranks);

  check_cuda(rank, "cudaMemset", cudaMemset(output, 0, count * sizeof(float)));
  double device_us = 0;
  const double nccl_us = time_nccl(rank, size, gpu, input, output, count, options, &device_us);
  expect_all(rank, "ncclAllReduce's sum", output, count, ranks);

  chorus::shutdown();
  cudaFree(input);
  cudaFree(output);
  if (rank == 0) {
    std::printf("# np=%d iterations=%d warmup=%d; bare NCCL on the device alone: %.1f us per allreduce\n", size,
                options.iterations, options.warmup, device_us);
    std::printf("nccl_allreduce bytes=%zu chorus_us=%.1f nccl_us=%.1f ratio=%.3f\n", count * sizeof(float),
                chorus_us, nccl_us, nccl_us / chorus_us);
  }
  MPI_Finalize();
  return 0;
}
