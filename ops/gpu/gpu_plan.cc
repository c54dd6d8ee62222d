#include "ops/gpu/gpu_plan.h"

#include <algorithm>
#include <cstring>

namespace chorus {
namespace {

constexpr size_t kServedOffset = 1;
constexpr size_t kIndexOffset = 2;
constexpr size_t kUuidOffset = kIndexOffset + 4;
constexpr size_t kUuidBytes = 64;
constexpr size_t kHostOffset = kUuidOffset + kUuidBytes;
constexpr size_t kHostBytes = kRankGpuBytes - kHostOffset;

// `text`, cut to leave room for the terminating zero, zero-padded.
void put_string(const std::string& text, char* out, size_t bytes) {
  std::memset(out, 0, bytes);
  std::memcpy(out, text.data(), std::min(text.size(), bytes - 1));
}

std::string get_string(const char* in, size_t bytes) { return std::string(in, strnlen(in, bytes)); }

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return "[" + text + "]";
}

std::string no_device(const RankGpu& mine) {
  return "this rank sees no CUDA device" + (mine.why.empty() ? std::string() : " (" + mine.why + ")");
}

std::string mode_text(GpuBackendMode mode) { return std::string("CHORUS_GPU_BACKEND=") + gpu_backend_mode_name(mode); }

std::string sharing_text(const SharedGpu& shared) {
  return "ranks " + std::to_string(shared.first_rank) + " and " + std::to_string(shared.second_rank) +
         " share GPU " + shared.uuid + " on host " + shared.host;
}

}  // namespace

Status bind_cuda_device(int local_rank, int visible, int64_t chosen, const std::string& visible_env,
                        GpuBinding* out) {
  if (chosen >= 0) {
    if (chosen >= visible) {
      return Status::InvalidArgument("CHORUS_CUDA_DEVICE=" + std::to_string(chosen) +
                                     " names a GPU this rank does not see: it sees " + std::to_string(visible) +
                                     " (indices 0 to " + std::to_string(visible - 1) + "; " +
                                     visible_env + ")");
    }
    out->index = static_cast<int>(chosen);
    out->how = "CHORUS_CUDA_DEVICE=" + std::to_string(chosen);
    return Status::OK();
  }
  out->index = local_rank % visible;
  out->how = "local rank " + std::to_string(local_rank) + " modulo the " + std::to_string(visible) +
             (visible == 1 ? " GPU" : " GPUs") + " this rank sees";
  return Status::OK();
}

void encode_rank_gpu(const RankGpu& gpu, char out[kRankGpuBytes]) {
  out[0] = static_cast<char>(gpu.state);
  out[kServedOffset] = gpu.served ? 1 : 0;
  const int32_t index = gpu.index;
  std::memcpy(out + kIndexOffset, &index, sizeof(index));
  put_string(gpu.uuid, out + kUuidOffset, kUuidBytes);
  put_string(gpu.host, out + kHostOffset, kHostBytes);
}

RankGpu decode_rank_gpu(const char in[kRankGpuBytes]) {
  RankGpu gpu;
  const auto state = static_cast<uint8_t>(in[0]);
  // A state this build does not know counts as a failure, never as a GPU.
  gpu.state = state <= static_cast<uint8_t>(RankGpu::State::kFailed) ? static_cast<RankGpu::State>(state)
                                                                      : RankGpu::State::kFailed;
  gpu.served = in[kServedOffset] != 0;
  int32_t index = 0;
  std::memcpy(&index, in + kIndexOffset, sizeof(index));
  gpu.index = index;
  gpu.uuid = get_string(in + kUuidOffset, kUuidBytes);
  gpu.host = get_string(in + kHostOffset, kHostBytes);
  return gpu;
}

std::optional<SharedGpu> find_shared_gpu(const std::vector<RankGpu>& ranks) {
  for (size_t a = 0; a < ranks.size(); ++a) {
    if (ranks[a].state != RankGpu::State::kBound) continue;
    for (size_t b = a + 1; b < ranks.size(); ++b) {
      if (ranks[b].state == RankGpu::State::kBound && ranks[b].uuid == ranks[a].uuid) {
        return SharedGpu{static_cast<int>(a), static_cast<int>(b), ranks[a].uuid, ranks[a].host};
      }
    }
  }
  return std::nullopt;
}

const char* gpu_path_name(GpuPlan::Path path) {
  switch (path) {
    case GpuPlan::Path::kNone: return "none";
    case GpuPlan::Path::kNccl: return "nccl";
    case GpuPlan::Path::kStaged: return "staged";
    case GpuPlan::Path::kProgramsOwn: return "the program's own";
  }
  return "unknown";
}

Status plan_gpu_backends(const std::vector<RankGpu>& ranks, int my_rank, GpuBackendMode mode, bool nccl_built,
                         GpuPlan* out) {
  const RankGpu& mine = ranks.at(static_cast<size_t>(my_rank));
  std::vector<int> failed, without;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].state == RankGpu::State::kFailed) failed.push_back(static_cast<int>(r));
    if (ranks[r].state == RankGpu::State::kNone) without.push_back(static_cast<int>(r));
  }
  if (!failed.empty()) {
    if (mine.state == RankGpu::State::kFailed) return mine.failure;
    return Status::Aborted("binding a GPU failed on rank(s) " + ranks_text(failed) +
                           " (their own error says why), so this rank does not start either");
  }
  GpuPlan plan;
  if (!without.empty()) {
    if (mode != GpuBackendMode::kAuto) {
      return Status::InvalidArgument(
          mode_text(mode) + " asks for GPU collectives, which need a GPU on every rank, but rank(s) " +
          ranks_text(without) + " see no CUDA device" +
          (mine.state == RankGpu::State::kNone ? " (this rank: " + no_device(mine) + ")" : std::string()));
    }
    if (without.size() < ranks.size()) {
      plan.reason = "GPU collectives are off: rank(s) " + ranks_text(without) +
                    " see no CUDA device, and a GPU collective needs a GPU on every rank";
      plan.level = LogLevel::kWarning;
    }
    plan.refusal = mine.state == RankGpu::State::kNone
                       ? no_device(mine)
                       : "GPU collectives are off in this job: rank(s) " + ranks_text(without) +
                             " see no CUDA device, and every rank needs one";
    *out = plan;
    return Status::OK();
  }

  if (std::all_of(ranks.begin(), ranks.end(), [](const RankGpu& gpu) { return gpu.served; })) {
    plan.path = GpuPlan::Path::kProgramsOwn;
    *out = plan;
    return Status::OK();
  }
  const std::optional<SharedGpu> shared = find_shared_gpu(ranks);
  const std::string no_nccl = "this build of Chorus has no NCCL backend (built with CHORUS_WITH_NCCL=OFF)";
  switch (mode) {
    case GpuBackendMode::kNccl:
      if (!nccl_built) return Status::InvalidArgument(mode_text(mode) + ", but " + no_nccl + "; use auto or staged");
      if (shared) {
        return Status::InvalidArgument(mode_text(mode) + ", but " + sharing_text(*shared) +
                                       ", and NCCL cannot run two ranks on one GPU; bind each rank to a GPU of "
                                       "its own (CHORUS_CUDA_DEVICE, CUDA_VISIBLE_DEVICES) or use auto or staged");
      }
      plan.path = GpuPlan::Path::kNccl;
      plan.reason = "GPU collectives run over NCCL (" + mode_text(mode) + ")";
      break;
    case GpuBackendMode::kStaged:
      plan.path = GpuPlan::Path::kStaged;
      plan.reason = "GPU collectives go through host memory (" + mode_text(mode) + ")";
      break;
    case GpuBackendMode::kAuto:
      if (shared) {
        plan.path = GpuPlan::Path::kStaged;
        plan.reason = sharing_text(*shared) +
                      ": NCCL cannot run two ranks on one GPU; GPU collectives go through host memory";
        plan.level = LogLevel::kWarning;
      } else if (!nccl_built) {
        plan.path = GpuPlan::Path::kStaged;
        plan.reason = no_nccl + ": GPU collectives go through host memory";
      } else {
        plan.path = GpuPlan::Path::kNccl;
        plan.reason = "GPU collectives run over NCCL";
      }
      break;
  }
  *out = plan;
  return Status::OK();
}

Status plan_without_cuda(GpuBackendMode mode, GpuPlan* out) {
  const std::string why = "this build of Chorus has no CUDA support (built with CHORUS_WITH_CUDA=OFF)";
  if (mode != GpuBackendMode::kAuto) {
    return Status::InvalidArgument(mode_text(mode) + " asks for GPU collectives, but " + why);
  }
  GpuPlan plan;
  plan.refusal = why;
  *out = plan;
  return Status::OK();
}

std::string other_gpu_refusal(const GpuBinding& binding) {
  return "this rank's device is cuda:" + std::to_string(binding.index) + " (" + binding.how +
         "; CHORUS_CUDA_DEVICE chooses another): Chorus serves one GPU per rank";
}

}  // namespace chorus
