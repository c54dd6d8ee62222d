// DeviceHierarchicalBackend (ops/device_hierarchical_backend.h) on the
// asynchronous test device, with this job's ranks divided into pretend hosts
// (Topology::node given per rank): the flat, within-host and cross-host
// backends are the test device's backend over the whole job, each pretend
// host's ranks and each local rank's ranks, all queueing on one device whose
// stream runs later, as NCCL, NCCL and the host-staged backend share a GPU's
// stream. Layouts: np 2 and 3, hosts of one rank (mode on: the cross step
// alone); np 4, 2 x 2 in blocks ({0,1},{2,3}) and round robin, and 4 x 1;
// np 6, 2 x 3 and 3 x 2.
//
// Results are read back from the device and compared with the hierarchical
// reference (test/support/hierarchical_reference.h, computed on the host
// from the documented order: each host folded in local-rank order, then the
// hosts in host order): bit for bit without a factor, every dtype x op x
// count (0, 1, fewer than a host's ranks, not a multiple of them, 1M), in
// place and not; with a factor, within the dtype's rounding of the scaled
// reference (the factor goes with the cross-host step, rounded there once).
// Also: allreduces queued back to back without waiting, scratch growing
// among them; what the selection leaves runs on the flat backend; the
// setup's refusals and fallbacks. Every other collective, and the Backend
// contract, on the same device: backend_contract_test.cc.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "ops/device_hierarchical_backend.h"
#include "ops/device_hierarchical_setup.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_datatypes.h"
#include "support/async_device/async_test_backend.h"
#include "support/device_allreduce_check.h"
#include "support/hierarchical_reference.h"

namespace chorus_test {
namespace {

using chorus::Backend;
using chorus::DataType;
using chorus::DeviceHierarchicalBackend;
using chorus::ReduceOp;
using chorus::AutoOnOff;
using chorus::Status;
using chorus::StatusCode;

const DataType kDtypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kInt16,    DataType::kUInt16,
                            DataType::kInt32,   DataType::kInt64,   DataType::kFloat16,  DataType::kBFloat16,
                            DataType::kFloat32, DataType::kFloat64};
const DataType kFloats[] = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

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

std::vector<HostLayout> layouts_for(int size) {
  if (size == 4) return {HostLayout::block(2, 2), HostLayout::cyclic(2, 2), HostLayout::block(4, 1)};
  if (size == 6) return {HostLayout::block(2, 3), HostLayout::block(3, 2)};
  return {HostLayout::block(size, 1)};
}

// This rank's place in `layout`, as Communication's topology would say it.
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

// The flat backend, counting the allreduces that reach it.
class CountingBackend : public chorus::DeviceForwardingBackend {
 public:
  using DeviceForwardingBackend::DeviceForwardingBackend;
  const char* name() const override { return "counting"; }
  chorus::WorkPtr allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                            double factor) override {
    ++allreduces;
    return fallback().allreduce(input, output, count, dtype, op, factor);
  }
  int allreduces = 0;
};

// One test device and the backends over it, for one layout.
struct Job {
  HostLayout layout;
  std::shared_ptr<AsyncTestDevice> device;
  MPI_Comm flat_comm = MPI_COMM_NULL;
  std::unique_ptr<chorus::MpiTypes> types;
  CountingBackend* flat = nullptr;  // owned by `backend`
  std::unique_ptr<Backend> backend;

  ~Job() {
    backend.reset();
    device.reset();
    if (flat_comm != MPI_COMM_NULL) MPI_Comm_free(&flat_comm);
  }
};

// A maker of a level's backend on `device`; `fail_on` (a world rank) fails
// there instead.
chorus::HierarchyLevelMaker level_on(std::shared_ptr<AsyncTestDevice> device, int fail_on = -1) {
  return [device, fail_on](MPI_Comm, std::unique_ptr<Backend> transport, std::unique_ptr<Backend>* out) {
    if (world_rank() == fail_on) return Status::Internal("injected: no backend here");
    *out = std::make_unique<AsyncTestBackend>(std::move(transport), device);
    return Status::OK();
  };
}

// Builds `job` over `layout` (mode `mode`, threshold `threshold` bytes);
// the setup's status.
Status build(Job* job, const HostLayout& layout, AutoOnOff mode, int64_t threshold = 0, int fail_on = -1) {
  job->layout = layout;
  job->device = std::make_shared<AsyncTestDevice>(chorus::Device::custom(0), std::chrono::microseconds(20));
  job->types = std::make_unique<chorus::MpiTypes>();
  EXPECT_TRUE(job->types->create().ok());
  MPI_Comm_dup(MPI_COMM_WORLD, &job->flat_comm);
  auto flat = std::make_unique<CountingBackend>(std::make_unique<AsyncTestBackend>(
      std::make_unique<chorus::MpiBackend>(job->flat_comm, job->types.get()), job->device));
  job->flat = flat.get();
  chorus::DeviceHierarchySetup setup;
  setup.selection = chorus::HierarchicalSelection{mode, threshold, world_size()};
  setup.topology = pretend(layout);
  setup.device = job->device;
  setup.make_local = level_on(job->device, fail_on);
  setup.make_cross = level_on(job->device);
  setup.flat_name = "NCCL";
  return chorus::make_device_hierarchical_backend(setup, MPI_COMM_WORLD, std::move(flat), &job->backend);
}

// One case through the job's backend, checked against the hierarchical
// reference (or the flat one, when the setup kept the flat backend alone).
using Case = AllreduceCase;
using Queued = PreparedAllreduce;

Queued prepare(Job& job, const Case& c) {
  return prepare_allreduce(*job.device, job.layout, job.backend.get() == job.flat, c);
}
void start(Job& job, Queued& q) { start_allreduce(*job.backend, q); }
void check(Job& job, Queued& q) { check_allreduce(*job.device, job.layout, Match::kHierarchicalOrder, q); }

void run(Job& job, const Case& c) {
  Queued q = prepare(job, c);
  start(job, q);
  check(job, q);
}

class DeviceHierarchicalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const HostLayout& layout : layouts_for(world_size())) {
      jobs_.push_back(std::make_unique<Job>());
      const Status status = build(jobs_.back().get(), layout, AutoOnOff::kOn);
      ASSERT_TRUE(status.ok()) << layout.describe() << ": " << status.to_string();
      ASSERT_NE(dynamic_cast<DeviceHierarchicalBackend*>(jobs_.back()->backend.get()), nullptr);
    }
  }
  static void TearDownTestSuite() { jobs_.clear(); }
  static std::vector<std::unique_ptr<Job>> jobs_;
};

std::vector<std::unique_ptr<Job>> DeviceHierarchicalTest::jobs_;

TEST_F(DeviceHierarchicalTest, EveryDtypeOpAndCountMatchesTheHostsThenHostsOrder) {
  uint64_t seed = 1;
  for (auto& job : jobs_) {
    const int64_t local = job->layout.local_size;
    // Nothing; one element; fewer than a host's ranks; a multiple of them;
    // a remainder of one and of local - 1.
    const std::vector<int64_t> counts = {0, 1, local - 1, 4 * local, 4 * local + 1, 1000 * local + local - 1};
    for (DataType dtype : kDtypes) {
      for (ReduceOp op : kOps) {
        for (int64_t count : counts) {
          ++seed;
          run(*job, Case{dtype, op, count, seed % 2 == 0, 1.0, seed});
        }
      }
    }
    // The selection (on) sent everything here, nothing to the flat backend.
    EXPECT_EQ(job->flat->allreduces, 0);
  }
}

TEST_F(DeviceHierarchicalTest, TheFactorIsAppliedOnceInPlaceAndNot) {
  uint64_t seed = 5000;
  for (auto& job : jobs_) {
    for (DataType dtype : kFloats) {
      for (ReduceOp op : kOps) {
        for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{1001}}) {
          for (double factor : {1.0 / world_size(), 0.37 / world_size()}) {
            for (bool in_place : {false, true}) run(*job, Case{dtype, op, count, in_place, factor, ++seed});
          }
        }
      }
    }
  }
}

TEST_F(DeviceHierarchicalTest, AMillionElements) {
  for (auto& job : jobs_) {
    run(*job, Case{DataType::kFloat32, ReduceOp::kSum, 1 << 20, false, 1.0, 71});
    run(*job, Case{DataType::kBFloat16, ReduceOp::kSum, (1 << 20) + 3, true, 1.0 / world_size(), 72});
  }
}

// Allreduces queued one after another, the host never waiting in between:
// the stream alone keeps each one's steps in order, and the scratch the
// shares pass through, reused by each and grown among them, is never
// overwritten while queued work still reads it.
TEST(DeviceHierarchicalQueue, AllreducesQueuedBackToBackWithoutWaiting) {
  uint64_t seed = 9000;
  for (const HostLayout& layout : layouts_for(world_size())) {
    // A job of its own: its scratch starts at the least and must grow here.
    Job job;
    ASSERT_TRUE(build(&job, layout, AutoOnOff::kOn).ok());
    std::vector<Queued> queued;
    for (int i = 0; i < 24; ++i) {
      // Counts growing past the first scratch (64 KiB) and shrinking again.
      const int64_t count = i < 12 ? 37 + int64_t{i} * 5000 : 3 + int64_t{i % 5} * 11;
      queued.push_back(prepare(job, Case{kDtypes[i % std::size(kDtypes)], kOps[i % 4], count, i % 3 == 0, 1.0, ++seed}));
    }
    for (Queued& q : queued) start(job, q);
    for (Queued& q : queued) check(job, q);
  }
}

TEST(DeviceHierarchicalSelection, WhatAutoLeavesRunsFlat) {
  const HostLayout layout = layouts_for(world_size()).front();
  Job job;
  // Auto from 4 KiB: on hosts of one rank auto keeps the flat backend alone.
  ASSERT_TRUE(build(&job, layout, AutoOnOff::kAuto, 4096).ok());
  const bool hierarchical = dynamic_cast<DeviceHierarchicalBackend*>(job.backend.get()) != nullptr;
  ASSERT_EQ(hierarchical, layout.local_size > 1) << layout.describe();
  // Integers below the threshold: flat. Above it: hierarchical.
  run(job, Case{DataType::kInt32, ReduceOp::kSum, 1000, false, 1.0, 1});
  EXPECT_EQ(job.flat->allreduces, 1);
  run(job, Case{DataType::kInt32, ReduceOp::kMax, 1024, false, 1.0, 2});
  EXPECT_EQ(job.flat->allreduces, hierarchical ? 1 : 2);
  // A float sum on 3+ ranks: hierarchical at any size (one order of folds).
  if (world_size() > 2) {
    run(job, Case{DataType::kFloat32, ReduceOp::kSum, 3, false, 1.0, 3});
    EXPECT_EQ(job.flat->allreduces, hierarchical ? 1 : 3);
  }

  // The other collectives go through the flat backend on the same stream:
  // the "device_hierarchical" row of backend_contract_test.cc runs each.
  EXPECT_FALSE(job.backend->fuses_in_place(1 << 20, DataType::kFloat32, ReduceOp::kSum));
}

TEST(DeviceHierarchicalSetup, OffAndOneRankPerHostUnderAutoKeepTheFlatBackend) {
  for (AutoOnOff mode : {AutoOnOff::kOff, AutoOnOff::kAuto}) {
    Job job;
    const HostLayout layout = HostLayout::block(world_size(), 1);
    ASSERT_TRUE(build(&job, layout, mode).ok());
    EXPECT_EQ(job.backend.get(), job.flat) << chorus::auto_on_off_name(mode);
  }
  Job off;
  ASSERT_TRUE(build(&off, layouts_for(world_size()).front(), AutoOnOff::kOff).ok());
  EXPECT_EQ(off.backend.get(), off.flat);
  // One pretend host: the hierarchy has nothing to span.
  Job one_host;
  ASSERT_TRUE(build(&one_host, HostLayout::block(1, world_size()), AutoOnOff::kOn).ok());
  EXPECT_EQ(one_host.backend.get(), one_host.flat);
}

// The last rank alone on host 1, the others on host 0: hosts of different
// sizes from np 3 on.
HostLayout uneven_hosts() {
  HostLayout layout;
  const int n = world_size();
  layout.hosts = 2;
  layout.local_size = n - 1;  // the most; unused by the setup
  for (int r = 0; r < n; ++r) {
    layout.host_of.push_back(r == n - 1 ? 1 : 0);
    layout.local_of.push_back(r == n - 1 ? 0 : r);
  }
  return layout;
}

TEST(DeviceHierarchicalSetup, HostsOfDifferentSizesFailOnEveryRankWhenOnAndRunFlatUnderAuto) {
  if (world_size() < 3) GTEST_SKIP() << "needs 3 ranks for hosts of different sizes";
  Job on;
  const Status status = build(&on, uneven_hosts(), AutoOnOff::kOn);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "CHORUS_HIERARCHICAL_ALLREDUCE='on' needs the same number of ranks on every host, but this job's 2 "
            "hosts hold between 1 and " + std::to_string(world_size() - 1) +
                " ranks; expected auto (flat NCCL for such jobs) or off");
  Job automatic;
  ASSERT_TRUE(build(&automatic, uneven_hosts(), AutoOnOff::kAuto).ok());
  EXPECT_EQ(automatic.backend.get(), automatic.flat);
}

TEST(DeviceHierarchicalSetup, ALevelThatCannotBeMadeOnOneRankFailsEveryRankWhenOnAndRunsFlatUnderAuto) {
  const HostLayout layout = layouts_for(world_size()).front();
  const int failing = world_size() - 1;
  Job on;
  const Status status = build(&on, layout, AutoOnOff::kOn, 0, failing);
  ASSERT_FALSE(status.ok());
  if (world_rank() == failing) {
    EXPECT_EQ(status.code(), StatusCode::kInternal);
    EXPECT_NE(status.message().find("failed on this rank: the backend within the host: injected: no backend here"),
              std::string::npos)
        << status.message();
  } else {
    EXPECT_EQ(status.code(), StatusCode::kAborted);
    EXPECT_NE(status.message().find("CHORUS_HIERARCHICAL_ALLREDUCE='on' but making the hierarchical allreduce of "
                                    "custom:0 memory's backends failed on rank(s) [" +
                                    std::to_string(failing) + "]"),
              std::string::npos)
        << status.message();
  }
  Job automatic;
  ASSERT_TRUE(build(&automatic, layout, AutoOnOff::kAuto, 0, failing).ok());
  // (With hosts of one rank auto never makes the levels.)
  EXPECT_EQ(automatic.backend.get(), automatic.flat);
  run(automatic, Case{DataType::kFloat32, ReduceOp::kSum, 100, false, 1.0, 3});
}

}  // namespace
}  // namespace chorus_test
