// NcclBackend's failure paths on GPU memory: abort() ends outstanding work
// and fails every later collective with the reason; work that does not
// finish within NcclOptions::timeout aborts the communicator and fails
// naming the timeout. Work is kept outstanding by a StreamGate (the stream
// waits for a host function), and each test makes a backend of its own
// (an aborted communicator is of no further use). Skips, saying why,
// without a GPU per rank. Every rank aborts its own backend, so no rank is
// left waiting for another.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/harness.h"
#include "support/nccl_job.h"

namespace chorus_test {
namespace {

using chorus::DataType;
using chorus::ReduceOp;
using chorus::Status;
using chorus::StatusCode;
using chorus::WorkPtr;
using ::testing::HasSubstr;

constexpr int64_t kCount = 1 << 20;

class NcclAbortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string shortage = gpu_shortage();
    if (!shortage.empty()) GTEST_SKIP() << shortage;
  }
  // After the gate opens, what the stream made of the aborted work (shown,
  // not checked: what NCCL leaves behind an abort is NCCL's business, and
  // the runtime ends the job after it).
  static void report_stream(chorus::CudaDevice& device) {
    const cudaError_t drained = cudaStreamSynchronize(device.stream());
    std::printf("[rank %d] the stream after the abort: %s\n", world_rank(), cudaGetErrorString(drained));
  }
};

// ncclCommAbort itself returns only once NCCL's kernels are off the stream,
// and here they wait behind the gate: abort() runs on a thread of its own,
// as in the runtime, and the gate opens once the failure has been seen.
TEST_F(NcclAbortTest, AbortEndsOutstandingAndLaterWorkWithTheReason) {
  std::unique_ptr<NcclJob> job;
  ASSERT_TRUE(is_ok(NcclJob::create(chorus::NcclOptions{}, &job)));
  chorus::NcclBackend& backend = job->backend();
  std::shared_ptr<void> data = to_device(job->device(), nullptr, kCount * sizeof(float));
  {
    StreamGate gate(job->device());
    WorkPtr outstanding = backend.allreduce(data.get(), data.get(), kCount, DataType::kFloat32, ReduceOp::kSum, 0.5);
    ASSERT_TRUE(outstanding);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(outstanding->test()) << "the gate should hold the collective";

    std::thread aborting([&] { backend.abort("rank 3 exited (test)"); });
    EXPECT_TRUE(eventually([&] { return outstanding->test(); }, std::chrono::seconds(10)));
    const Status ended = outstanding->wait();
    EXPECT_EQ(ended.code(), StatusCode::kAborted);
    EXPECT_EQ(ended.message(), "the NCCL communicator was aborted: rank 3 exited (test)");
    EXPECT_EQ(outstanding->wait().message(), ended.message()) << "the same outcome on every call";

    const Status later =
        backend.allreduce(data.get(), data.get(), kCount, DataType::kFloat32, ReduceOp::kSum, 1.0)->wait();
    EXPECT_EQ(later.message(), ended.message());
    EXPECT_EQ(backend.barrier()->wait().message(), ended.message());
    std::vector<int64_t> recv;
    EXPECT_EQ(backend.exchange_counts(std::vector<int64_t>(static_cast<size_t>(world_size()), 0), &recv).message(),
              ended.message());
    backend.abort("a second reason");  // the first one stays
    EXPECT_EQ(backend.barrier()->wait().message(), ended.message());
    gate.open();
    aborting.join();
  }
  report_stream(job->device());
}

TEST_F(NcclAbortTest, WorkThatDoesNotFinishInTimeAbortsTheCommunicator) {
  chorus::NcclOptions options;
  options.timeout = std::chrono::milliseconds(300);
  std::unique_ptr<NcclJob> job;
  ASSERT_TRUE(is_ok(NcclJob::create(options, &job)));
  chorus::NcclBackend& backend = job->backend();
  std::shared_ptr<void> data = to_device(job->device(), nullptr, kCount * sizeof(float));
  {
    StreamGate gate(job->device());
    WorkPtr outstanding = backend.broadcast(data.get(), kCount * sizeof(float), 0);
    // The timeout's abort waits for NCCL's kernels, which wait for the gate.
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      gate.open();
    });
    const auto began = std::chrono::steady_clock::now();
    const Status timed_out = outstanding->wait();
    const auto waited = std::chrono::steady_clock::now() - began;
    opener.join();
    EXPECT_EQ(timed_out.code(), StatusCode::kTimeout);
    EXPECT_THAT(timed_out.message(),
                HasSubstr("NCCL broadcast did not finish within 0.3 s: a peer rank did not take part"));
    EXPECT_GE(waited, std::chrono::milliseconds(300));
    EXPECT_LT(waited, std::chrono::seconds(10));
    EXPECT_EQ(backend.barrier()->wait().message(), timed_out.message());
  }
  report_stream(job->device());
}

}  // namespace
}  // namespace chorus_test
