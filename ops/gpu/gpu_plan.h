// Which GPU each rank binds to, and what runs the collectives of GPU memory
// in a job: the decisions, as pure functions of what the ranks report, so
// that they are tested without a GPU and give the same answer on every rank.
// ops/gpu/gpu_backends.cc gathers the reports and acts on the plan.
//
// The rules (docs/DESIGN.md, "GPUs: binding, shared GPUs and the
// host-staged path"):
// - A rank binds to CHORUS_CUDA_DEVICE when set, else to its local rank
//   modulo the number of GPUs it sees.
// - GPU collectives need a GPU on every rank. When some ranks see none, auto
//   registers no GPU backend anywhere (rank 0 says which ranks lack one;
//   host memory still works, so a CPU job on mixed hosts runs as before);
//   nccl and staged fail init() on every rank.
// - Two ranks bound to one GPU (the same UUID) cannot both join an NCCL
//   communicator: auto then stages every rank's GPU collectives through host
//   memory, as it does in a build without NCCL; nccl fails init().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/logging.h"
#include "chorus/status.h"

namespace chorus {

// The GPU a rank binds to and how it was chosen, for messages.
struct GpuBinding {
  int index = 0;
  std::string how;  // "CHORUS_CUDA_DEVICE=1", "local rank 3 modulo the 2 GPUs this rank sees"
};

// CHORUS_CUDA_DEVICE (`chosen` >= 0) or local_rank % visible; `visible` > 0.
// InvalidArgument when `chosen` names a GPU this process does not see,
// quoting `visible_env` ("CUDA_VISIBLE_DEVICES=0,1", "CUDA_VISIBLE_DEVICES
// unset").
Status bind_cuda_device(int local_rank, int visible, int64_t chosen, const std::string& visible_env,
                        GpuBinding* out);

// What a rank reports about its GPU at init().
struct RankGpu {
  enum class State : uint8_t { kNone = 0, kBound = 1, kFailed = 2 };
  State state = State::kNone;
  int index = -1;      // kBound: the device index it bound to
  std::string uuid;    // kBound: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  std::string host;    // its host name, for messages
  // kBound: a backend the program brought (detail::init_with_backends)
  // already serves this GPU.
  bool served = false;
  // Not sent, known for this rank's own entry only. kNone: why it sees no
  // GPU ("CUDA_VISIBLE_DEVICES=; cudaGetDeviceCount found none");
  // kFailed: its error.
  std::string why;
  Status failure;
};

// The fixed-size record the ranks allgather (state, served, index, uuid,
// host; longer strings are cut).
constexpr size_t kRankGpuBytes = 1 + 1 + 4 + 64 + 192;
void encode_rank_gpu(const RankGpu& gpu, char out[kRankGpuBytes]);
RankGpu decode_rank_gpu(const char in[kRankGpuBytes]);

// The first pair of ranks (lowest first rank, then lowest second) bound to
// the same GPU.
struct SharedGpu {
  int first_rank = 0;
  int second_rank = 0;
  std::string uuid;
  std::string host;
};
std::optional<SharedGpu> find_shared_gpu(const std::vector<RankGpu>& ranks);

struct GpuPlan {
  // kProgramsOwn: every rank's GPU is served by a backend the program
  // brought, which comes first anyway: nothing to add.
  enum class Path { kNone, kNccl, kStaged, kProgramsOwn };
  Path path = Path::kNone;
  // Why, for rank 0 to log once at `level` (empty: nothing to say).
  std::string reason;
  LogLevel level = LogLevel::kInfo;
  // kNone: why this rank's CUDA tensors have no backend, completing "tensor
  // 'x' is on cuda:0 but ..." (e.g. "this rank sees no CUDA device (...)").
  std::string refusal;
};
const char* gpu_path_name(GpuPlan::Path path);

// Every rank passes the same `ranks` (its own entry with its `why`) and
// agreed settings and gets the same path; an error, when the setting asks
// for what cannot be had or a rank failed, on every rank (a rank that failed
// gets its own error).
Status plan_gpu_backends(const std::vector<RankGpu>& ranks, int my_rank, GpuBackendMode mode, bool nccl_built,
                         GpuPlan* out);

// A build without CUDA: no GPU backend (the refusal says so); an error when
// CHORUS_GPU_BACKEND asks for one.
Status plan_without_cuda(GpuBackendMode mode, GpuPlan* out);

// Completes "tensor 'x' is on cuda:1 but ..." on a rank bound to `binding`.
std::string other_gpu_refusal(const GpuBinding& binding);

}  // namespace chorus
