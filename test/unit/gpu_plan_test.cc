// The GPU decisions that need no GPU (ops/gpu/gpu_plan.h): which device a rank
// binds to, the wire record of what it reports, which ranks share a GPU, and
// what runs GPU collectives for every CHORUS_GPU_BACKEND; and the registry's
// refusal of a device it has no backend for.
#include "ops/gpu/gpu_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "contracts/backend_registry.h"
#ifdef CHORUS_WITH_CUDA
#include "ops/gpu/cuda_binding.h"
#endif

namespace chorus {
namespace {

using Path = GpuPlan::Path;

RankGpu bound(const std::string& uuid, const std::string& host = "node1", int index = 0) {
  RankGpu gpu;
  gpu.state = RankGpu::State::kBound;
  gpu.uuid = uuid;
  gpu.host = host;
  gpu.index = index;
  return gpu;
}

RankGpu none(const std::string& why = "CUDA_VISIBLE_DEVICES unset; cudaGetDeviceCount found none") {
  RankGpu gpu;
  gpu.host = "cpu-node";
  gpu.why = why;
  return gpu;
}

// The plan every rank gets, checking that the path is the same on all.
std::vector<GpuPlan> plan_everywhere(const std::vector<RankGpu>& ranks, GpuBackendMode mode, bool nccl_built,
                                     std::vector<Status>* statuses = nullptr) {
  std::vector<GpuPlan> plans(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    const Status status = plan_gpu_backends(ranks, static_cast<int>(r), mode, nccl_built, &plans[r]);
    if (statuses != nullptr) statuses->push_back(status);
    else EXPECT_TRUE(status.ok()) << "rank " << r << ": " << status.to_string();
    EXPECT_EQ(plans[r].path, plans[0].path) << "rank " << r << " decided otherwise than rank 0";
  }
  return plans;
}

TEST(GpuBinding, LocalRankModuloTheVisibleGpus) {
  GpuBinding binding;
  ASSERT_TRUE(bind_cuda_device(0, 4, -1, "CUDA_VISIBLE_DEVICES unset", &binding).ok());
  EXPECT_EQ(binding.index, 0);
  ASSERT_TRUE(bind_cuda_device(5, 4, -1, "CUDA_VISIBLE_DEVICES unset", &binding).ok());
  EXPECT_EQ(binding.index, 1);
  EXPECT_EQ(binding.how, "local rank 5 modulo the 4 GPUs this rank sees");
  ASSERT_TRUE(bind_cuda_device(3, 1, -1, "CUDA_VISIBLE_DEVICES=2", &binding).ok());
  EXPECT_EQ(binding.index, 0);
  EXPECT_EQ(binding.how, "local rank 3 modulo the 1 GPU this rank sees");
}

TEST(GpuBinding, TheSettingOverridesTheLocalRank) {
  GpuBinding binding;
  ASSERT_TRUE(bind_cuda_device(0, 4, 3, "CUDA_VISIBLE_DEVICES unset", &binding).ok());
  EXPECT_EQ(binding.index, 3);
  EXPECT_EQ(binding.how, "CHORUS_CUDA_DEVICE=3");
  ASSERT_TRUE(bind_cuda_device(7, 2, 0, "CUDA_VISIBLE_DEVICES unset", &binding).ok());
  EXPECT_EQ(binding.index, 0);
}

TEST(GpuBinding, ASettingBeyondTheVisibleGpusIsAnError) {
  GpuBinding binding;
  const Status status = bind_cuda_device(0, 2, 2, "CUDA_VISIBLE_DEVICES=4,5", &binding);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "CHORUS_CUDA_DEVICE=2 names a GPU this rank does not see: it sees 2 (indices 0 to 1; "
            "CUDA_VISIBLE_DEVICES=4,5)");
}

TEST(GpuRecord, RoundTripsAndCutsLongStrings) {
  RankGpu gpu = bound("GPU-01234567-89ab-cdef-0123-456789abcdef", "a-host", 3);
  gpu.why = "local only";
  gpu.served = true;
  char record[kRankGpuBytes];
  encode_rank_gpu(gpu, record);
  const RankGpu back = decode_rank_gpu(record);
  EXPECT_EQ(back.state, RankGpu::State::kBound);
  EXPECT_TRUE(back.served);
  EXPECT_EQ(back.index, 3);
  EXPECT_EQ(back.uuid, gpu.uuid);
  EXPECT_EQ(back.host, "a-host");
  EXPECT_EQ(back.why, "") << "explanations stay on their rank";

  RankGpu long_host = none();
  long_host.host = std::string(1000, 'h');
  encode_rank_gpu(long_host, record);
  const RankGpu cut = decode_rank_gpu(record);
  EXPECT_EQ(cut.state, RankGpu::State::kNone);
  EXPECT_LT(cut.host.size(), kRankGpuBytes);
  EXPECT_EQ(cut.host, std::string(cut.host.size(), 'h'));

  record[0] = 42;  // a state this build does not know
  EXPECT_EQ(decode_rank_gpu(record).state, RankGpu::State::kFailed);
}

#ifdef CHORUS_WITH_CUDA
TEST(GpuRecord, UuidsAreSpelledLikeNvidiaSmi) {
  unsigned char bytes[16];
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<unsigned char>(i == 15 ? 0xff : i);
  EXPECT_EQ(gpu_uuid_text(bytes), "GPU-00010203-0405-0607-0809-0a0b0c0d0eff");
}
#endif

TEST(SharedGpus, TheFirstPairOfRanksOnOneUuid) {
  EXPECT_FALSE(find_shared_gpu({}));
  EXPECT_FALSE(find_shared_gpu({bound("GPU-a"), bound("GPU-b"), none(), none()}));
  const auto shared = find_shared_gpu({bound("GPU-a"), bound("GPU-b"), bound("GPU-b", "h2"), bound("GPU-a")});
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared->first_rank, 0);
  EXPECT_EQ(shared->second_rank, 3);
  EXPECT_EQ(shared->uuid, "GPU-a");
  EXPECT_EQ(shared->host, "node1");
  // Ranks without a GPU have no UUID to share.
  EXPECT_FALSE(find_shared_gpu({none(), none()}));
}

TEST(GpuPlanTest, AutoTakesNcclWhenEveryRankHasAGpuOfItsOwn) {
  const auto plans = plan_everywhere({bound("GPU-a"), bound("GPU-b", "node2")}, GpuBackendMode::kAuto, true);
  EXPECT_EQ(plans[0].path, Path::kNccl);
  EXPECT_EQ(plans[0].level, LogLevel::kInfo);
}

TEST(GpuPlanTest, AutoStagesThroughHostMemoryWhenRanksShareAGpu) {
  const auto plans = plan_everywhere({bound("GPU-a", "h"), bound("GPU-a", "h")}, GpuBackendMode::kAuto, true);
  EXPECT_EQ(plans[0].path, Path::kStaged);
  EXPECT_EQ(plans[0].level, LogLevel::kWarning);
  EXPECT_EQ(plans[0].reason,
            "ranks 0 and 1 share GPU GPU-a on host h: NCCL cannot run two ranks on one GPU; GPU collectives go "
            "through host memory");
}

TEST(GpuPlanTest, AutoStagesInABuildWithoutNccl) {
  const auto plans = plan_everywhere({bound("GPU-a"), bound("GPU-b")}, GpuBackendMode::kAuto, false);
  EXPECT_EQ(plans[0].path, Path::kStaged);
  EXPECT_EQ(plans[0].reason,
            "this build of Chorus has no NCCL backend (built with CHORUS_WITH_NCCL=OFF): GPU collectives go "
            "through host memory");
}

TEST(GpuPlanTest, StagedIsTakenWhenAskedFor) {
  for (bool nccl_built : {true, false}) {
    const auto plans = plan_everywhere({bound("GPU-a"), bound("GPU-b")}, GpuBackendMode::kStaged, nccl_built);
    EXPECT_EQ(plans[0].path, Path::kStaged);
    EXPECT_EQ(plans[0].reason, "GPU collectives go through host memory (CHORUS_GPU_BACKEND=staged)");
  }
}

TEST(GpuPlanTest, NcclWhenAskedForAndPossible) {
  const auto plans = plan_everywhere({bound("GPU-a"), bound("GPU-b")}, GpuBackendMode::kNccl, true);
  EXPECT_EQ(plans[0].path, Path::kNccl);
}

TEST(GpuPlanTest, NcclAskedForFailsEveryRankWhenItCannotRun) {
  std::vector<Status> statuses;
  plan_everywhere({bound("GPU-a"), bound("GPU-b")}, GpuBackendMode::kNccl, false, &statuses);
  for (const Status& status : statuses) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(),
              "CHORUS_GPU_BACKEND=nccl, but this build of Chorus has no NCCL backend (built with "
              "CHORUS_WITH_NCCL=OFF); use auto or staged");
  }
  statuses.clear();
  plan_everywhere({bound("GPU-a"), bound("GPU-b", "h"), bound("GPU-b", "h")}, GpuBackendMode::kNccl, true,
                  &statuses);
  for (const Status& status : statuses) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(),
              "CHORUS_GPU_BACKEND=nccl, but ranks 1 and 2 share GPU GPU-b on host h, and NCCL cannot run two "
              "ranks on one GPU; bind each rank to a GPU of its own (CHORUS_CUDA_DEVICE, CUDA_VISIBLE_DEVICES) "
              "or use auto or staged");
  }
}

TEST(GpuPlanTest, GpusTheProgramsOwnBackendsServeGetNoSecondBackend) {
  std::vector<RankGpu> ranks = {bound("GPU-a"), bound("GPU-b")};
  for (RankGpu& gpu : ranks) gpu.served = true;
  for (GpuBackendMode mode : {GpuBackendMode::kAuto, GpuBackendMode::kNccl, GpuBackendMode::kStaged}) {
    EXPECT_EQ(plan_everywhere(ranks, mode, true)[0].path, Path::kProgramsOwn);
  }
  // Served on some ranks only: every rank still gets the plan's backend.
  ranks[1].served = false;
  EXPECT_EQ(plan_everywhere(ranks, GpuBackendMode::kAuto, true)[0].path, Path::kNccl);
}

TEST(GpuPlanTest, NoGpuAnywhereRegistersNothingAndSaysWhy) {
  const auto plans = plan_everywhere({none("CUDA_VISIBLE_DEVICES=; cudaGetDeviceCount found none"), none()},
                                     GpuBackendMode::kAuto, true);
  EXPECT_EQ(plans[0].path, Path::kNone);
  EXPECT_EQ(plans[0].reason, "") << "a CPU job has nothing to be told";
  EXPECT_EQ(plans[0].refusal, "this rank sees no CUDA device (CUDA_VISIBLE_DEVICES=; cudaGetDeviceCount found none)");
}

TEST(GpuPlanTest, SomeRanksWithoutAGpuTurnGpuCollectivesOffEverywhere) {
  const auto plans = plan_everywhere({bound("GPU-a"), none(), bound("GPU-c"), none()}, GpuBackendMode::kAuto, true);
  EXPECT_EQ(plans[0].path, Path::kNone);
  EXPECT_EQ(plans[0].level, LogLevel::kWarning);
  EXPECT_EQ(plans[0].reason,
            "GPU collectives are off: rank(s) [1, 3] see no CUDA device, and a GPU collective needs a GPU on every "
            "rank");
  EXPECT_EQ(plans[0].refusal,
            "GPU collectives are off in this job: rank(s) [1, 3] see no CUDA device, and every rank needs one");
  EXPECT_EQ(plans[1].refusal,
            "this rank sees no CUDA device (CUDA_VISIBLE_DEVICES unset; cudaGetDeviceCount found none)");
}

TEST(GpuPlanTest, AskingForGpuCollectivesWithoutAGpuOnEveryRankFailsEveryRank) {
  for (GpuBackendMode mode : {GpuBackendMode::kNccl, GpuBackendMode::kStaged}) {
    std::vector<Status> statuses;
    plan_everywhere({bound("GPU-a"), none()}, mode, true, &statuses);
    const std::string head = std::string("CHORUS_GPU_BACKEND=") + gpu_backend_mode_name(mode) +
                             " asks for GPU collectives, which need a GPU on every rank, but rank(s) [1] see no "
                             "CUDA device";
    EXPECT_EQ(statuses[0].message(), head);
    EXPECT_EQ(statuses[1].message(),
              head + " (this rank: this rank sees no CUDA device (CUDA_VISIBLE_DEVICES unset; cudaGetDeviceCount "
                     "found none))");
    for (const Status& status : statuses) EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  }
}

TEST(GpuPlanTest, ARankThatFailedToBindFailsEveryRank) {
  RankGpu failed;
  failed.state = RankGpu::State::kFailed;
  failed.failure = Status::InvalidArgument("CHORUS_CUDA_DEVICE=4 names a GPU this rank does not see: ...");
  std::vector<Status> statuses;
  plan_everywhere({bound("GPU-a"), failed, none()}, GpuBackendMode::kAuto, true, &statuses);
  EXPECT_EQ(statuses[1].code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(statuses[1].message(), failed.failure.message());
  for (int r : {0, 2}) {
    EXPECT_EQ(statuses[r].code(), StatusCode::kAborted);
    EXPECT_EQ(statuses[r].message(),
              "binding a GPU failed on rank(s) [1] (their own error says why), so this rank does not start either");
  }
}

TEST(GpuPlanTest, ABuildWithoutCudaRefusesCudaTensorsAndForcedModes) {
  GpuPlan plan;
  ASSERT_TRUE(plan_without_cuda(GpuBackendMode::kAuto, &plan).ok());
  EXPECT_EQ(plan.path, Path::kNone);
  EXPECT_EQ(plan.refusal, "this build of Chorus has no CUDA support (built with CHORUS_WITH_CUDA=OFF)");
  const Status forced = plan_without_cuda(GpuBackendMode::kStaged, &plan);
  EXPECT_EQ(forced.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(forced.message(),
            "CHORUS_GPU_BACKEND=staged asks for GPU collectives, but this build of Chorus has no CUDA support "
            "(built with CHORUS_WITH_CUDA=OFF)");
}

TEST(GpuPlanTest, AnotherGpuThanTheRanksOwnIsNamed) {
  GpuBinding binding;
  ASSERT_TRUE(bind_cuda_device(1, 2, -1, "CUDA_VISIBLE_DEVICES unset", &binding).ok());
  BackendRegistry registry;
  registry.explain(Device::Kind::kCUDA, other_gpu_refusal(binding));
  const Status status = registry.check("x", Device::cuda(0));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "tensor 'x' is on cuda:0 but this rank's device is cuda:1 (local rank 1 modulo the 2 GPUs this rank "
            "sees; CHORUS_CUDA_DEVICE chooses another): Chorus serves one GPU per rank");
}

TEST(BackendRegistryCheck, ADeviceNothingExplainsKeepsTheGeneralRefusal) {
  BackendRegistry registry;
  const Status status = registry.check("w", Device::custom(0));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "'w': no backend in this build supports tensors on custom:0");
}

}  // namespace
}  // namespace chorus
