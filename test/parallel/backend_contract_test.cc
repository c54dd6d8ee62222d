// The contract of Backend (core/contracts/backend.h), which every backend
// passes: one table row per implementation that a test can construct, each
// case run for every row. A row says how to make its backend (or why it
// cannot be had here: its cases then skip with that reason, on every rank
// alike), what its reductions take (dtypes, ops) and how to read its memory
// from the host. Rows: MPI; shared memory (every allreduce over the segment);
// the hierarchical host backend and the hierarchical device backend (over
// the asynchronous test device) on pretend hosts of this job's ranks; the
// asynchronous test backend; with CUDA the staged backend, with NCCL the
// NCCL backend (their cases skip without a GPU per rank).
//
// Inputs go into the backend's memory through its own DeviceOps (in its
// stream's order); results are read back directly once the work says it is
// done (`peek`, not waiting for the stream), so work that reports done before
// its result is in place fails here. Every rank computes the expected result
// on the host from every rank's known input (support/reference.h), without
// the backend or MPI. Reductions use values whose sums and products are
// exact in every dtype and in any order, so one reference serves backends
// that fold in different orders; a factor is within the dtype's rounding.
//
// What each backend does beyond the contract (MPI's count limits and ordered
// path, shared memory's chunks and rank-order bits, the hierarchical order,
// NCCL's 16-bit rounding, the staged backend's stream order and staging
// buffers, abort) is tested in that backend's own test file.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "base/topology.h"
#include "ops/device_hierarchical_setup.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_datatypes.h"
#include "ops/mpi/mpi_setup_channel.h"
#include "ops/shm/hierarchical_backend.h"
#include "ops/shm/shm_backend.h"
#include "support/async_device/async_test_backend.h"
#include "support/harness.h"
#include "support/hierarchical_reference.h"
#include "support/reference.h"
#ifdef CHORUS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "ops/cuda/cuda_device.h"
#include "ops/gpu/staged_backend.h"
#include "support/staged_gpu.h"
#endif
#ifdef CHORUS_WITH_NCCL
#include "support/nccl_job.h"
#endif

namespace chorus_test {
namespace {

using chorus::Backend;
using chorus::Device;
using chorus::DeviceOps;
using chorus::Status;
using chorus::StatusCode;
using chorus::WorkPtr;

constexpr uint64_t kSeed = 0xbac0;

// What a row's maker gives: the backend, the device whose memory it serves,
// and what owns them both (the backend with its communicators, datatypes,
// device), released at the end of the test.
struct Made {
  std::shared_ptr<void> owner;
  Backend* backend = nullptr;
  Device device;
};

struct Row {
  const char* name;
  const char* backend_name;  // what name() says
  // The dtypes its reductions (allreduce, reducescatter) take; the other
  // numeric dtypes it must refuse. The ops it reduces with.
  std::vector<DataType> reduces;
  std::vector<ReduceOp> ops;
  // Collective: the backend, or false with the reason it cannot be had here
  // (the same on every rank).
  std::function<bool(Made* out, std::string* unavailable)> make;
  // Reads `bytes` of the backend's memory into host memory without waiting
  // for its stream (only after the work that wrote them said it is done).
  std::function<void(void* host, const void* memory, size_t bytes)> peek;
};

// Failed cases name the row, not its bytes.
void PrintTo(const Row& row, std::ostream* out) { *out << row.name; }

// An MPI backend's communicator (a duplicate of the world's) and datatypes,
// which must outlive it, and whatever else a row builds on them.
struct MpiParts {
  MpiParts() {
    EXPECT_TRUE(types.create().ok());
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  }
  ~MpiParts() {
    backend.reset();
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    types.destroy();
  }
  std::unique_ptr<Backend> mpi() { return std::make_unique<chorus::MpiBackend>(comm, &types); }

  chorus::MpiTypes types;
  MPI_Comm comm = MPI_COMM_NULL;
  std::unique_ptr<Backend> backend;  // released first
};

bool owned(std::shared_ptr<MpiParts> parts, Device device, Made* out) {
  out->backend = parts->backend.get();
  out->device = device;
  out->owner = std::move(parts);
  return out->backend != nullptr;
}

// The pretend hosts the hierarchical rows divide this job's ranks into
// (each with its own shared memory and cross-host communicators, as on real
// hosts): 2 x 2 at np 4, otherwise one rank per host (a job of one rank
// has none to span: those rows skip there).
HostLayout pretend_hosts() {
  const int size = world_size();
  return size % 2 == 0 && size >= 4 ? HostLayout::block(2, size / 2) : HostLayout::block(size, 1);
}

void host_peek(void* host, const void* memory, size_t bytes) {
  if (bytes > 0) std::memcpy(host, memory, bytes);
}

bool make_mpi(Made* out, std::string*) {
  auto parts = std::make_shared<MpiParts>();
  parts->backend = parts->mpi();
  return owned(parts, Device::cpu(), out);
}

// Every allreduce over the shared segment (mode on, no threshold).
bool make_shm(Made* out, std::string*) {
  auto parts = std::make_shared<MpiParts>();
  chorus::MpiSetupChannel world(MPI_COMM_WORLD);
  const chorus::ShmAllreduceOptions options;
  std::unique_ptr<chorus::ShmGroup> group;
  const Status created = chorus::ShmGroup::create(
      world, chorus::ShmAllreduce::data_bytes(world_size(), options.chunk_bytes), std::chrono::seconds(60), &group);
  EXPECT_TRUE(is_ok(created));
  if (!created.ok()) return false;
  chorus::ShmAllreduceSelection selection;
  selection.mode = chorus::AutoOnOff::kOn;
  selection.ranks = world_size();
  parts->backend = std::make_unique<chorus::ShmBackend>(parts->mpi(), std::move(group), options, selection);
  return owned(parts, Device::cpu(), out);
}

// Why a hierarchical row cannot be had in a job of one rank (empty when it can).
std::string one_rank_job(std::string* unavailable) {
  if (world_size() == 1) *unavailable = "a job of one rank has no hosts for the hierarchy to span";
  return *unavailable;
}

// Every allreduce hierarchical (mode on), over the pretend hosts.
bool make_hierarchical(Made* out, std::string* unavailable) {
  if (!one_rank_job(unavailable).empty()) return false;
  auto parts = std::make_shared<MpiParts>();
  const HostLayout layout = pretend_hosts();
  const auto me = static_cast<size_t>(world_rank());
  std::unique_ptr<chorus::HierarchicalAllreduce> hierarchical;
  const Status created = chorus::HierarchicalAllreduce::create(MPI_COMM_WORLD, layout.host_of[me], layout.local_of[me],
                                                               chorus::HierarchicalAllreduceOptions(), &hierarchical);
  EXPECT_TRUE(is_ok(created)) << layout.describe();
  if (!created.ok()) return false;
  const chorus::HierarchicalSelection selection{chorus::AutoOnOff::kOn, 0, world_size()};
  parts->backend =
      std::make_unique<chorus::HierarchicalBackend>(parts->mpi(), std::move(hierarchical), selection);
  return owned(parts, Device::cpu(), out);
}

bool make_async(Made* out, std::string*) {
  auto parts = std::make_shared<MpiParts>();
  parts->backend = std::make_unique<AsyncTestBackend>(
      parts->mpi(), std::make_shared<AsyncTestDevice>(Device::custom(0), std::chrono::microseconds(20)));
  return owned(parts, Device::custom(0), out);
}

// DeviceHierarchicalBackend on the asynchronous test device over the
// pretend hosts, as device_hierarchical_test.cc builds it: the flat, local
// and cross backends are test-device backends over MPI, all on one stream;
// every allreduce hierarchical (mode on).
bool make_device_hierarchical(Made* out, std::string* unavailable) {
  if (!one_rank_job(unavailable).empty()) return false;
  auto parts = std::make_shared<MpiParts>();
  auto device = std::make_shared<AsyncTestDevice>(Device::custom(0), std::chrono::microseconds(20));
  const HostLayout layout = pretend_hosts();
  chorus::DeviceHierarchySetup setup;
  setup.selection = chorus::HierarchicalSelection{chorus::AutoOnOff::kOn, 0, world_size()};
  setup.topology.rank = world_rank();
  setup.topology.size = world_size();
  setup.topology.node = layout.host_of[static_cast<size_t>(setup.topology.rank)];
  setup.topology.nodes = layout.hosts;
  setup.topology.local_rank = layout.local_of[static_cast<size_t>(setup.topology.rank)];
  setup.topology.local_size = layout.local_size;
  setup.device = device;
  const chorus::HierarchyLevelMaker level = [device](MPI_Comm, std::unique_ptr<Backend> transport,
                                                     std::unique_ptr<Backend>* level_out) {
    *level_out = std::make_unique<AsyncTestBackend>(std::move(transport), device);
    return Status::OK();
  };
  setup.make_local = level;
  setup.make_cross = level;
  setup.flat_name = "the flat test-device backend";
  const Status made = chorus::make_device_hierarchical_backend(
      setup, MPI_COMM_WORLD, std::make_unique<AsyncTestBackend>(parts->mpi(), device), &parts->backend);
  EXPECT_TRUE(is_ok(made)) << layout.describe();
  if (!made.ok()) return false;
  EXPECT_STREQ(parts->backend->name(), "hierarchical-device") << "the setup kept the flat backend alone";
  return owned(parts, Device::custom(0), out);
}

#ifdef CHORUS_WITH_CUDA
// cudaMemcpy on the legacy default stream, which does not wait for a
// backend's non-blocking stream.
void cuda_peek(void* host, const void* memory, size_t bytes) {
  if (bytes > 0) {
    ASSERT_EQ(cudaMemcpy(host, memory, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  }
}

// On this rank's GPU (ranks may share one) over an MPI backend of its own.
bool make_staged(Made* out, std::string* unavailable) {
  int visible = 0;
  const std::string why = why_no_gpu(&visible);
  if (!why.empty()) {
    *unavailable = "no GPU for the staged backend: " + why;
    return false;
  }
  auto parts = std::make_shared<MpiParts>();
  std::unique_ptr<chorus::CudaDevice> device;
  const int index = host_local_rank() % visible;
  const Status created = chorus::CudaDevice::create(index, &device);
  EXPECT_TRUE(is_ok(created));
  if (!created.ok()) return false;
  parts->backend = std::make_unique<chorus::StagedBackend>(std::move(device), parts->mpi(), world_rank());
  return owned(parts, Device::cuda(index), out);
}
#endif

#ifdef CHORUS_WITH_NCCL
// On GPU cuda:<rank>, made as the runtime makes it (support/nccl_job.h).
bool make_nccl(Made* out, std::string* unavailable) {
  *unavailable = gpu_shortage();
  if (!unavailable->empty()) return false;
  std::unique_ptr<NcclJob> job;
  const Status created = NcclJob::create(chorus::NcclOptions{}, &job);
  EXPECT_TRUE(is_ok(created));
  if (!created.ok()) return false;
  out->backend = &job->backend();
  out->device = Device::cuda(world_rank());
  out->owner = std::shared_ptr<NcclJob>(job.release());
  return true;
}
#endif

const std::vector<ReduceOp> kOps = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

std::vector<Row> backends() {
  std::vector<Row> rows = {
      {"mpi", "mpi", numeric_dtypes(), kOps, make_mpi, host_peek},
      {"shm", "shm", numeric_dtypes(), kOps, make_shm, host_peek},
      {"hierarchical", "hierarchical", numeric_dtypes(), kOps, make_hierarchical, host_peek},
      {"async_test", "async-test", numeric_dtypes(), kOps, make_async, host_peek},
      {"device_hierarchical", "hierarchical-device", numeric_dtypes(), kOps, make_device_hierarchical, host_peek},
  };
#ifdef CHORUS_WITH_CUDA
  rows.push_back({"staged", "staged", numeric_dtypes(), kOps, make_staged, cuda_peek});
#endif
#ifdef CHORUS_WITH_NCCL
  std::vector<DataType> nccl_reduces;
  for (DataType dtype : numeric_dtypes()) {
    if (dtype != DataType::kInt16 && dtype != DataType::kUInt16) nccl_reduces.push_back(dtype);
  }
  rows.push_back({"nccl", "nccl", nccl_reduces, kOps, make_nccl, cuda_peek});
#endif
  return rows;
}

std::string describe(DataType dtype, ReduceOp op, double factor, int64_t count, bool in_place) {
  return std::string(chorus::dtype_name(dtype)) + " " + chorus::reduce_op_name(op) + " x " +
         std::to_string(factor) + ", " + std::to_string(count) + " elements" + (in_place ? ", in place" : "");
}

int64_t sum_of(const std::vector<int64_t>& counts, size_t end) {
  return std::accumulate(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(end), int64_t{0});
}
int64_t sum_of(const std::vector<int64_t>& counts) { return sum_of(counts, counts.size()); }

class BackendContract : public ::testing::TestWithParam<Row> {
 protected:
  void SetUp() override {
    std::string unavailable;
    const bool made = GetParam().make(&made_, &unavailable);
    if (!made && !unavailable.empty()) GTEST_SKIP() << unavailable;
    ASSERT_TRUE(made);
    ops_ = backend().device_ops(made_.device);
    ASSERT_NE(ops_, nullptr);
  }
  void TearDown() override {
    owned_.clear();
    made_ = Made();
  }

  Backend& backend() { return *made_.backend; }
  int rank() const { return world_rank(); }
  int size() const { return world_size(); }

  // `bytes` (at least 1) of the backend's memory.
  void* allocate(size_t bytes) {
    std::shared_ptr<void> memory;
    const Status allocated = ops_->allocate(std::max<size_t>(bytes, 1), &memory);
    EXPECT_TRUE(is_ok(allocated));
    owned_.push_back(memory);
    return memory.get();
  }
  // The backend's memory holding `buffer`'s bytes, copied in its stream's order.
  void* upload(const Buffer& buffer) {
    void* memory = allocate(buffer.bytes());
    if (buffer.bytes() > 0) {
      EXPECT_TRUE(is_ok(ops_->from_host(memory, buffer.data(), buffer.bytes())));
    }
    return memory;
  }
  // `count` elements of the backend's memory, read without waiting for its
  // stream: only after the work that wrote them is done.
  Buffer download(const void* memory, DataType dtype, int64_t count) {
    Buffer out(dtype, {count});
    GetParam().peek(out.data(), memory, out.bytes());
    return out;
  }
  // The work finished (test() is true once wait() returned) and succeeded.
  static ::testing::AssertionResult done(const WorkPtr& work) {
    if (!work) return ::testing::AssertionFailure() << "no work";
    const Status status = work->wait();
    if (!work->test()) return ::testing::AssertionFailure() << "test() is false after wait()";
    return is_ok(status);
  }
  // The status of work that failed.
  static Status failure(const WorkPtr& work) { return work ? work->wait() : Status::Internal("no work"); }

  // One allreduce of `count` elements against the reference of every rank's input.
  void check_allreduce(DataType dtype, ReduceOp op, double factor, int64_t count, bool in_place, int index) {
    SCOPED_TRACE(describe(dtype, op, factor, count, in_place));
    const Values values = op == ReduceOp::kProduct ? Values::kProduct : Values::kSmall;
    const std::vector<Buffer> inputs = make_inputs(dtype, {count}, size(), index, kSeed, values);
    const Buffer& mine = inputs[static_cast<size_t>(rank())];
    void* input = upload(mine);
    void* output = in_place ? input : allocate(mine.bytes());
    ASSERT_TRUE(done(backend().allreduce(input, output, count, dtype, op, factor)));
    EXPECT_TRUE(matches(download(output, dtype, count).tensor(), reference_reduce(inputs, op, 1.0, factor)));
    if (!in_place) {
      EXPECT_TRUE(same_bytes(download(input, dtype, count).tensor(), mine)) << "the input must stay as it was";
    }
  }

  // The factors a reduction of `dtype` takes: 1 for integers; an average's
  // 1/size and a factor that rounds for floating point.
  std::vector<double> factors(DataType dtype) const {
    if (!chorus::is_floating_point(dtype)) return {1.0};
    return {1.0, 1.0 / size(), 1.0 / 3};
  }

  Made made_;
  DeviceOps* ops_ = nullptr;
  std::vector<std::shared_ptr<void>> owned_;
};

TEST_P(BackendContract, ServesItsOwnDeviceOnly) {
  EXPECT_STREQ(backend().name(), GetParam().backend_name);
  EXPECT_TRUE(backend().supports(made_.device));
  EXPECT_EQ(ops_->device(), made_.device);
  for (const Device& other : {Device::cpu(), Device::cuda(0), Device::cuda(1), Device::cuda(size()),
                              Device::custom(0), Device::custom(1)}) {
    if (other == made_.device) continue;
    EXPECT_FALSE(backend().supports(other)) << other.to_string();
  }
}

TEST_P(BackendContract, AllreducesEveryDtypeAndOpItTakesWithFactorsInPlaceAndNot) {
  int index = 0;
  for (DataType dtype : GetParam().reduces) {
    for (ReduceOp op : GetParam().ops) {
      for (double factor : factors(dtype)) {
        for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1001}}) {
          for (bool in_place : {false, true}) check_allreduce(dtype, op, factor, count, in_place, ++index);
        }
      }
    }
  }
}

TEST_P(BackendContract, AllreducesLargeMessages) {
  // Past shared memory's chunks and MPI's ordered path's 4 MiB. How a
  // message is cut into chunks depends on its bytes, not on the op: every
  // dtype and every op goes past the chunks once, the ops taken in turn
  // (every pair of the two is checked on short messages above), in place
  // and not.
  int index = 1000;
  const std::vector<ReduceOp>& ops = GetParam().ops;
  size_t turn = 0;
  for (DataType dtype : GetParam().reduces) {
    const ReduceOp op = ops[turn % ops.size()];
    const double factor = chorus::is_floating_point(dtype) ? 1.0 / 3 : 1.0;
    check_allreduce(dtype, op, factor, 100003, (turn + turn / ops.size()) % 2 == 1, ++index);
    ++turn;
  }
  check_allreduce(DataType::kFloat32, ReduceOp::kSum, 1.0 / size(), (1 << 20) + 3, true, ++index);
}

// 8- and 16-bit integer sums and products over the whole range of the
// dtype wrap around in its width (Open MPI's own vector sums would saturate).
TEST_P(BackendContract, NarrowIntegerSumsAndProductsWrapAround) {
  int index = 2000;
  for (DataType dtype : {DataType::kUInt8, DataType::kInt8, DataType::kInt16, DataType::kUInt16}) {
    const std::vector<DataType>& reduces = GetParam().reduces;
    if (std::find(reduces.begin(), reduces.end(), dtype) == reduces.end()) continue;
    const int64_t bits = 8 * static_cast<int64_t>(chorus::dtype_size(dtype));
    const bool is_signed = dtype == DataType::kInt8 || dtype == DataType::kInt16;
    const int64_t lo = is_signed ? -(int64_t{1} << (bits - 1)) : 0;
    const int64_t hi = is_signed ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct}) {
      SCOPED_TRACE(std::string(chorus::dtype_name(dtype)) + " " + chorus::reduce_op_name(op));
      const int64_t count = 513;
      ++index;
      std::vector<Buffer> inputs;
      for (int r = 0; r < size(); ++r) {
        inputs.emplace_back(dtype, chorus::Shape{count});
        for (int64_t i = 0; i < count; ++i) {
          inputs.back().set(i, static_cast<double>(pick(lo, hi, kSeed, static_cast<uint64_t>(index),
                                                        static_cast<uint64_t>(r), static_cast<uint64_t>(i))));
        }
      }
      void* data = upload(inputs[static_cast<size_t>(rank())]);
      ASSERT_TRUE(done(backend().allreduce(data, data, count, dtype, op, 1.0)));
      EXPECT_TRUE(matches(download(data, dtype, count).tensor(), reference_reduce(inputs, op)));
    }
  }
}

TEST_P(BackendContract, AllgathersUnevenAndEmptyCountsInPlaceAndNot) {
  // Equal; uneven with empty ranks; none at all; large and growing.
  std::vector<std::vector<int64_t>> patterns(4);
  for (int r = 0; r < size(); ++r) {
    patterns[0].push_back(5);
    patterns[1].push_back(r == 1 ? 0 : 3 + 7 * r);
    patterns[2].push_back(0);
    patterns[3].push_back(12345 + 2 * r);
  }
  int index = 3000;
  for (const std::vector<int64_t>& counts : patterns) {
    for (DataType dtype : all_dtypes()) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(chorus::dtype_name(dtype)) + " counts " + ::testing::PrintToString(counts) +
                     (in_place ? " in place" : ""));
        ++index;
        std::vector<Buffer> inputs;
        for (int r = 0; r < size(); ++r) {
          inputs.push_back(make_input(dtype, {counts[static_cast<size_t>(r)]}, r, index, kSeed));
        }
        const Buffer& mine = inputs[static_cast<size_t>(rank())];
        const Buffer expected = reference_allgather(inputs);
        const int64_t total = sum_of(counts);
        const size_t before = static_cast<size_t>(sum_of(counts, static_cast<size_t>(rank()))) * chorus::dtype_size(dtype);
        void* output = upload(Buffer(dtype, {total}));
        const void* input = nullptr;
        if (in_place) {  // this rank's block already in its place in the output
          void* slot = static_cast<char*>(output) + before;
          if (mine.bytes() > 0) {
            ASSERT_TRUE(is_ok(ops_->from_host(slot, mine.data(), mine.bytes())));
          }
          input = slot;
        } else {
          input = upload(mine);
        }
        ASSERT_TRUE(done(backend().allgatherv(input, output, counts, dtype)));
        EXPECT_TRUE(same_bytes(download(output, dtype, total).tensor(), expected));
      }
    }
  }
}

TEST_P(BackendContract, BroadcastsFromEveryRoot) {
  int index = 4000;
  for (int root = 0; root < size(); ++root) {
    for (int64_t bytes : {int64_t{0}, int64_t{1}, int64_t{1001}, int64_t{70001}}) {
      SCOPED_TRACE("root " + std::to_string(root) + ", " + std::to_string(bytes) + " bytes");
      ++index;
      const Buffer sent = make_input(DataType::kUInt8, {bytes}, root, index, kSeed);
      const Buffer other = make_input(DataType::kUInt8, {bytes}, rank() + size(), index, kSeed);
      void* buffer = upload(rank() == root ? sent : other);
      ASSERT_TRUE(done(backend().broadcast(buffer, bytes, root)));
      EXPECT_TRUE(same_bytes(download(buffer, DataType::kUInt8, bytes).tensor(), sent));
    }
  }
}

TEST_P(BackendContract, ExchangesCountsAsInt64) {
  // Beyond 32 bits: counts travel as int64.
  const auto count = [](int from, int to) { return (int64_t{1} << 40) + 1000 * from + to; };
  std::vector<int64_t> send;
  for (int r = 0; r < size(); ++r) send.push_back(count(rank(), r));
  std::vector<int64_t> received;
  ASSERT_TRUE(is_ok(backend().exchange_counts(send, &received)));
  ASSERT_EQ(received.size(), static_cast<size_t>(size()));
  for (int r = 0; r < size(); ++r) EXPECT_EQ(received[static_cast<size_t>(r)], count(r, rank())) << "from " << r;
}

TEST_P(BackendContract, ExchangesCountsThenAlltoallsUnevenSplits) {
  int index = 5000;
  for (int pattern = 0; pattern < 2; ++pattern) {
    for (DataType dtype : all_dtypes()) {
      SCOPED_TRACE(std::string(chorus::dtype_name(dtype)) + " pattern " + std::to_string(pattern));
      ++index;
      // 0 to 3 rows to each rank (zeros included); or thousands, uneven.
      std::vector<std::vector<int64_t>> splits;
      std::vector<Buffer> inputs;
      for (int r = 0; r < size(); ++r) {
        if (pattern == 0) {
          splits.push_back(alltoall_splits(r, size(), kSeed + static_cast<uint64_t>(index)));
        } else {
          splits.emplace_back();
          for (int to = 0; to < size(); ++to) splits.back().push_back(12345 / size() + r - to);
        }
        inputs.push_back(make_input(dtype, {sum_of(splits.back())}, r, index, kSeed));
      }
      const AlltoallResult expected = reference_alltoall(inputs, splits, rank());
      const std::vector<int64_t>& send_counts = splits[static_cast<size_t>(rank())];
      std::vector<int64_t> recv_counts;
      ASSERT_TRUE(is_ok(backend().exchange_counts(send_counts, &recv_counts)));
      ASSERT_EQ(recv_counts, expected.received_splits);
      const int64_t received = sum_of(recv_counts);
      void* input = upload(inputs[static_cast<size_t>(rank())]);
      void* output = upload(Buffer(dtype, {received}));
      ASSERT_TRUE(done(backend().alltoallv(input, send_counts, output, recv_counts, dtype)));
      EXPECT_TRUE(same_bytes(download(output, dtype, received).tensor(), expected.output));
    }
  }
}

TEST_P(BackendContract, ReducescattersEqualAndUnevenBlocksWithFactorsInPlaceAndNot) {
  // Equal blocks; uneven with rank 0's empty; an even split of an odd total
  // (the first ranks one more).
  std::vector<std::vector<int64_t>> patterns(3);
  for (int r = 0; r < size(); ++r) {
    patterns[0].push_back(300);
    patterns[1].push_back(r == 0 ? 0 : 100 * r + 7);
    patterns[2].push_back(1001 / size() + (r < 1001 % size() ? 1 : 0));
  }
  int index = 6000;
  for (const std::vector<int64_t>& counts : patterns) {
    const int64_t total = sum_of(counts);
    const int64_t before = sum_of(counts, static_cast<size_t>(rank()));
    const int64_t mine = counts[static_cast<size_t>(rank())];
    for (DataType dtype : GetParam().reduces) {
      for (ReduceOp op : GetParam().ops) {
        const double factor = chorus::is_floating_point(dtype) ? 1.0 / 3 : 1.0;
        for (bool in_place : {false, true}) {
          SCOPED_TRACE(describe(dtype, op, factor, total, in_place) + ", counts " + ::testing::PrintToString(counts));
          const Values values = op == ReduceOp::kProduct ? Values::kProduct : Values::kSmall;
          const std::vector<Buffer> inputs = make_inputs(dtype, {total}, size(), ++index, kSeed, values);
          const std::vector<double> reduced = reference_reduce(inputs, op, 1.0, factor);
          const std::vector<double> expected(reduced.begin() + before, reduced.begin() + before + mine);
          void* input = upload(inputs[static_cast<size_t>(rank())]);
          void* output = in_place ? input : allocate(static_cast<size_t>(mine) * chorus::dtype_size(dtype));
          ASSERT_TRUE(done(backend().reducescatter(input, output, counts, dtype, op, factor)));
          EXPECT_TRUE(matches(download(output, dtype, mine).tensor(), expected));
        }
      }
    }
  }
}

TEST_P(BackendContract, BarriersAndEmptyCollectivesFinish) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(done(backend().barrier()));
  const std::vector<int64_t> zeros(static_cast<size_t>(size()), 0);
  const DataType reduced = GetParam().reduces.front();
  EXPECT_TRUE(done(backend().allreduce(nullptr, nullptr, 0, reduced, ReduceOp::kSum, 1.0)));
  EXPECT_TRUE(done(backend().broadcast(nullptr, 0, size() - 1)));
  EXPECT_TRUE(done(backend().allgatherv(nullptr, nullptr, zeros, DataType::kInt8)));
  EXPECT_TRUE(done(backend().alltoallv(nullptr, zeros, nullptr, zeros, DataType::kInt8)));
  EXPECT_TRUE(done(backend().reducescatter(nullptr, nullptr, zeros, reduced, ReduceOp::kMin, 1.0)));
}

// What the contract rules out, every rank asking alike: a clear
// InvalidArgument from the work (or the call), never a crash or a hang; and
// the backend goes on working.
TEST_P(BackendContract, RefusesWhatItCannotDoWithAClearStatus) {
  const auto expect_invalid = [](const Status& status, const std::string& needle) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.to_string();
    EXPECT_NE(status.message().find(needle), std::string::npos) << "'" << status.message() << "' lacks '" << needle << "'";
  };
  // Memory uploaded before the refusals, for the allreduce after them.
  const std::vector<Buffer> inputs = make_inputs(DataType::kFloat32, {64}, size(), 7000, kSeed);
  void* after = upload(inputs[static_cast<size_t>(rank())]);
  void* memory = allocate(1024);
  const std::vector<int64_t> ones(static_cast<size_t>(size()), 1);

  // Reductions: kAverage is the executor's (a sum and a factor); bool, and
  // every dtype its row does not take, are refused, check_reduction first.
  expect_invalid(failure(backend().allreduce(memory, memory, 4, DataType::kFloat32, ReduceOp::kAverage, 1.0)), "average");
  expect_invalid(failure(backend().reducescatter(memory, memory, ones, DataType::kFloat32, ReduceOp::kAverage, 1.0)),
                 "average");
  expect_invalid(failure(backend().allreduce(memory, memory, 4, DataType::kBool, ReduceOp::kMax, 1.0)), "bool");
  expect_invalid(failure(backend().reducescatter(memory, memory, ones, DataType::kBool, ReduceOp::kSum, 1.0)), "bool");
  expect_invalid(failure(backend().allreduce(memory, memory, -1, DataType::kFloat32, ReduceOp::kSum, 1.0)), "negative");
  const std::vector<DataType>& reduces = GetParam().reduces;
  for (DataType dtype : numeric_dtypes()) {
    if (std::find(reduces.begin(), reduces.end(), dtype) != reduces.end()) {
      EXPECT_TRUE(is_ok(backend().check_reduction(dtype))) << chorus::dtype_name(dtype);
      continue;
    }
    const std::string name = chorus::dtype_name(dtype);
    expect_invalid(backend().check_reduction(dtype), name);
    expect_invalid(failure(backend().allreduce(memory, memory, 4, dtype, ReduceOp::kSum, 1.0)), name);
    expect_invalid(failure(backend().reducescatter(memory, memory, ones, dtype, ReduceOp::kMax, 1.0)), name);
  }
  // One count per rank; a root among the ranks.
  const std::vector<int64_t> too_many(static_cast<size_t>(size()) + 1, 1);
  expect_invalid(failure(backend().allgatherv(memory, memory, too_many, DataType::kInt8)), "one per rank");
  std::vector<int64_t> received;
  expect_invalid(backend().exchange_counts({}, &received), "one per rank");
  expect_invalid(failure(backend().broadcast(memory, 8, size())), "root rank");
  expect_invalid(failure(backend().broadcast(memory, 8, -1)), "root rank");

  // Still usable.
  ASSERT_TRUE(done(backend().barrier()));
  ASSERT_TRUE(done(backend().allreduce(after, after, 64, DataType::kFloat32, ReduceOp::kSum, 1.0)));
  EXPECT_TRUE(matches(download(after, DataType::kFloat32, 64).tensor(), reference_reduce(inputs, ReduceOp::kSum)));
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendContract, ::testing::ValuesIn(backends()),
                         [](const ::testing::TestParamInfo<Row>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace chorus_test
