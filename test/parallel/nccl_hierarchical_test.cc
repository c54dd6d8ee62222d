// The hierarchical allreduce on GPU memory (ops/gpu/gpu_hierarchical.h,
// ops/device_hierarchical_backend.h), with this job's ranks divided into
// pretend hosts (np 2: 2 x 1; np 4: 2 x 2 in blocks). Each test says what it
// needs and skips without it:
//   - StagedLevelsOnTheGpu (a GPU on every rank, one may serve all): the
//     algorithm on CudaDevice memory and stream with the host-staged
//     backend at every level, so its MPI steps fold in the documented order
//     and the result must match the hierarchical reference bit for bit:
//     every dtype, counts 0, 1, below and not a multiple of a host's ranks,
//     1M, in place and not, queued back to back, factors once;
//   - OneRankPerHostOverNccl (likewise): make_gpu_hierarchical_backend itself
//     on hosts of one rank (mode on): NCCL over each one-rank host (NCCL
//     allows several one-rank communicators on one GPU), the staged cross
//     step alone;
//   - TheRealConfiguration (a GPU of its own per rank): the flat NCCL
//     backend over every rank with the hierarchy in front of it, NCCL within
//     each pretend host: NCCL sums in its own order, so floats match within
//     a rounding per rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "support/device_allreduce_check.h"
#include "support/hierarchical_reference.h"

#ifdef CHORUS_WITH_NCCL
#include <cuda_runtime_api.h>

#include "ops/cuda/cuda_device.h"
#include "ops/gpu/gpu_hierarchical.h"
#include "ops/gpu/staged_backend.h"
#include "ops/device_hierarchical_backend.h"
#include "ops/device_hierarchical_setup.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_datatypes.h"
#include "ops/nccl/nccl_backend.h"
#include "support/nccl_job.h"
#endif

namespace chorus_test {
namespace {

#ifndef CHORUS_WITH_NCCL

TEST(NcclHierarchical, NeedsNccl) { GTEST_SKIP() << "this build has no NCCL backend (CHORUS_WITH_NCCL=OFF)"; }

#else

using chorus::Backend;
using chorus::DataType;
using chorus::ReduceOp;
using chorus::AutoOnOff;
using chorus::Status;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

HostLayout layout_for(int size) { return size == 4 ? HostLayout::block(2, 2) : HostLayout::block(size, 1); }

chorus::Topology pretend(const HostLayout& layout) {
  chorus::Topology topology;
  topology.rank = world_rank();
  topology.size = world_size();
  topology.node = layout.host_of[static_cast<size_t>(topology.rank)];
  topology.nodes = layout.hosts;
  topology.local_rank = layout.local_of[static_cast<size_t>(topology.rank)];
  topology.local_size = layout.local_size;
  return topology;
}

// Empty when every rank sees a GPU (all may share one); else why not, the
// same on every rank.
std::string no_gpu_anywhere() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
  }
  int fewest = count;
  MPI_Allreduce(&count, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return fewest > 0 ? "" : "a rank sees no CUDA GPU: the GPU backends need one";
}

// The GPU this rank uses: its own where there are enough, else shared.
int gpu_index() {
  int count = 1;
  cudaGetDeviceCount(&count);
  return world_rank() % count;
}

// The backends of one test and what they run on.
struct GpuJob {
  HostLayout layout = layout_for(world_size());
  std::shared_ptr<chorus::CudaDevice> device;
  chorus::MpiTypes types;
  MPI_Comm flat_comm = MPI_COMM_NULL;
  MPI_Comm setup_comm = MPI_COMM_NULL;
  std::unique_ptr<Backend> backend;

  GpuJob() {
    std::unique_ptr<chorus::CudaDevice> made;
    const Status created = chorus::CudaDevice::create(gpu_index(), &made);
    EXPECT_TRUE(created.ok()) << created.to_string();
    device = std::move(made);
    EXPECT_TRUE(types.create().ok());
    MPI_Comm_dup(MPI_COMM_WORLD, &flat_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &setup_comm);
  }
  ~GpuJob() {
    backend.reset();
    device.reset();
    for (MPI_Comm* comm : {&flat_comm, &setup_comm}) MPI_Comm_free(comm);
    types.destroy();
  }
  std::unique_ptr<Backend> flat_transport() { return std::make_unique<chorus::MpiBackend>(flat_comm, &types); }
  bool hierarchical() const { return dynamic_cast<chorus::DeviceHierarchicalBackend*>(backend.get()) != nullptr; }
};

const DataType kDtypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kInt32,   DataType::kInt64,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

// Every dtype x op at counts that cut the shares every way, queued back to
// back, then a million elements and factors.
void check_everything(GpuJob& job, Match match) {
  const int64_t local = job.layout.local_size;
  std::vector<PreparedAllreduce> queued;
  uint64_t seed = 1;
  for (DataType dtype : kDtypes) {
    for (ReduceOp op : kOps) {
      for (int64_t count : {int64_t{0}, int64_t{1}, local - 1, 4 * local + 1, 1000 * local + local - 1}) {
        queued.push_back(prepare_allreduce(*job.device, job.layout, false,
                                           AllreduceCase{dtype, op, count, seed % 2 == 0, 1.0, seed}));
        ++seed;
      }
    }
  }
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32}) {
    for (bool in_place : {false, true}) {
      queued.push_back(prepare_allreduce(*job.device, job.layout, false,
                                         AllreduceCase{dtype, ReduceOp::kSum, (1 << 20) + 3, in_place,
                                                       1.0 / world_size(), ++seed}));
      queued.push_back(prepare_allreduce(*job.device, job.layout, false,
                                         AllreduceCase{dtype, ReduceOp::kMax, 1001, in_place, 0.37, ++seed}));
    }
  }
  for (PreparedAllreduce& q : queued) start_allreduce(*job.backend, q);
  for (PreparedAllreduce& q : queued) check_allreduce(*job.device, job.layout, match, q);
}

chorus::HierarchicalSelection always() { return chorus::HierarchicalSelection{AutoOnOff::kOn, 0, world_size()}; }

TEST(NcclHierarchical, StagedLevelsOnTheGpu) {
  const std::string why = no_gpu_anywhere();
  if (!why.empty()) GTEST_SKIP() << why;
  GpuJob job;
  ASSERT_NE(job.device, nullptr);
  const auto staged = [&job](MPI_Comm comm, std::unique_ptr<Backend> transport, std::unique_ptr<Backend>* out) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    *out = std::make_unique<chorus::StagedBackend>(job.device, std::move(transport), rank);
    return Status::OK();
  };
  chorus::DeviceHierarchySetup setup;
  setup.selection = always();
  setup.topology = pretend(job.layout);
  setup.device = job.device;
  setup.make_local = staged;
  setup.make_cross = staged;
  setup.flat_name = "staged";
  const Status made = chorus::make_device_hierarchical_backend(
      setup, job.setup_comm, std::make_unique<chorus::StagedBackend>(job.device, job.flat_transport(), world_rank()),
      &job.backend);
  ASSERT_TRUE(made.ok()) << made.to_string();
  ASSERT_TRUE(job.hierarchical());
  check_everything(job, Match::kHierarchicalOrder);
}

TEST(NcclHierarchical, OneRankPerHostOverNccl) {
  const std::string why = no_gpu_anywhere();
  if (!why.empty()) GTEST_SKIP() << why;
  GpuJob job;
  ASSERT_NE(job.device, nullptr);
  job.layout = HostLayout::block(world_size(), 1);
  // The flat backend is staged here: NCCL over every rank would need a GPU
  // per rank, and with one rank per host no step runs on it but the rest.
  const Status made = chorus::make_gpu_hierarchical_backend(
      always(), pretend(job.layout), job.setup_comm, job.device,
      std::make_unique<chorus::StagedBackend>(job.device, job.flat_transport(), world_rank()), chorus::NcclOptions(),
      &job.backend);
  ASSERT_TRUE(made.ok()) << made.to_string();
  ASSERT_TRUE(job.hierarchical());
  check_everything(job, Match::kHierarchicalOrder);
}

TEST(NcclHierarchical, TheRealConfiguration) {
  const std::string why = gpu_shortage();
  if (!why.empty()) GTEST_SKIP() << why;
  GpuJob job;
  ASSERT_NE(job.device, nullptr);
  std::unique_ptr<Backend> flat;
  const Status nccl = chorus::make_nccl_backend(job.device, job.flat_transport(), chorus::NcclOptions(), &flat);
  ASSERT_TRUE(nccl.ok()) << nccl.to_string();
  chorus::HierarchicalSelection automatic{AutoOnOff::kAuto, 4096, world_size()};
  if (job.layout.local_size == 1) automatic.mode = AutoOnOff::kOn;  // auto keeps one rank per host flat
  const Status made = chorus::make_gpu_hierarchical_backend(automatic, pretend(job.layout), job.setup_comm,
                                                            job.device, std::move(flat), chorus::NcclOptions(),
                                                            &job.backend);
  ASSERT_TRUE(made.ok()) << made.to_string();
  ASSERT_TRUE(job.hierarchical());
  check_everything(job, Match::kAnyOrder);
  // What the selection leaves goes to NCCL over every rank: an allgather.
  const int n = world_size();
  std::vector<int64_t> counts(static_cast<size_t>(n), 3);
  const Bytes mine(3, static_cast<unsigned char>(world_rank() + 1));
  std::shared_ptr<void> input = device_check_detail::upload(*job.device, mine);
  std::shared_ptr<void> output = device_check_detail::upload(*job.device, Bytes(static_cast<size_t>(3 * n), 0));
  ASSERT_TRUE(job.backend->allgatherv(input.get(), output.get(), counts, DataType::kUInt8)->wait().ok());
  Bytes expected;
  for (int r = 0; r < n; ++r) expected.insert(expected.end(), 3, static_cast<unsigned char>(r + 1));
  EXPECT_EQ(device_check_detail::download(*job.device, output.get(), expected.size()), expected);
}

#endif

}  // namespace
}  // namespace chorus_test
