// Runtime configuration, read once from CHORUS_* environment variables at
// init(). Every variable has a type, a default and an accepted range; a value
// that does not parse or is out of range fails init() with a message naming
// the variable, the value and what is accepted.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "base/logging.h"

namespace chorus {

// CHORUS_SHM_ALLREDUCE: whether allreduces of host memory may run over shared
// memory among the ranks of one host (ops/shm/).
enum class ShmAllreduceMode { kAuto, kOn, kOff };
const char* shm_allreduce_mode_name(ShmAllreduceMode mode);

// CHORUS_SHM_PROBE: how auto decides, per message size, between the
// shared-memory and the MPI allreduce (ops/shm/shm_probe.h): by a start-up
// measurement kept in a per-machine cache file (cached), by a measurement
// that ignores and rewrites that file (fresh), or by the fixed
// CHORUS_SHM_ALLREDUCE_THRESHOLD (off).
enum class ShmProbeMode { kCached, kFresh, kOff };
const char* shm_probe_mode_name(ShmProbeMode mode);

// CHORUS_GPU_BACKEND: what runs the collectives of GPU memory
// (ops/gpu_plan.h): NCCL when it can, else host-staged (auto); NCCL or
// nothing (nccl); always through host memory (staged).
enum class GpuBackendMode { kAuto, kNccl, kStaged };
const char* gpu_backend_mode_name(GpuBackendMode mode);

struct Config {
  // CHORUS_FUSION_THRESHOLD: bytes; 0 disables fusion. Default 64 MiB.
  int64_t fusion_threshold_bytes = 64LL << 20;
  // CHORUS_CYCLE_TIME_MS: minimum time between the starts of two negotiation
  // cycles. 0 (default) starts a cycle as soon as any rank has new work;
  // work that arrives while a cycle runs is batched into the next one.
  double cycle_time_ms = 0.0;
  // CHORUS_CACHE_CAPACITY: response cache entries; 0 disables the fast path.
  int64_t cache_capacity = 1024;
  // CHORUS_TIMELINE: path of the Chrome trace rank 0 writes; empty = off.
  std::string timeline_path;
  // CHORUS_STALL_CHECK_SECONDS: warn about tensors some ranks submitted and
  // others did not after this long; 0 disables the check.
  double stall_check_seconds = 60.0;
  // CHORUS_STALL_SHUTDOWN_SECONDS: stop the job with an error after a stall
  // this long; 0 (default) never.
  double stall_shutdown_seconds = 0.0;
  // CHORUS_HEARTBEAT_TIMEOUT_SECONDS: a peer that sent no heartbeat for this
  // long is declared lost and the job ends (ops/heartbeat/heartbeat.h); 0
  // turns the heartbeat off. Every rank must hold the same value.
  double heartbeat_timeout_seconds = 30.0;
  // CHORUS_HEARTBEAT_INTERFACE: which of this host's addresses the heartbeat
  // offers its peers: a comma-separated list of interface names and IPv4
  // networks (eth0,10.200.0.0/24), as Open MPI's btl_tcp_if_include. Empty
  // (default): Open MPI's btl_tcp_if_include when set, else every interface.
  std::string heartbeat_interface;
  // CHORUS_LOG_LEVEL: trace, debug, info, warning, error. Default warning.
  LogLevel log_level = LogLevel::kWarning;
  // CHORUS_SHM_ALLREDUCE: auto (default: shared memory when every rank is on
  // one host and the message is at least the threshold), on (every allreduce
  // on host memory; the job must be on one host), off (always MPI).
  ShmAllreduceMode shm_allreduce = ShmAllreduceMode::kAuto;
  // CHORUS_SHM_ALLREDUCE_THRESHOLD: bytes from which auto picks shared memory.
  int64_t shm_allreduce_threshold_bytes = 64LL << 10;
  bool shm_allreduce_threshold_given = false;  // set in the environment
  // CHORUS_SHM_PROBE: cached (default), fresh or off. A threshold given
  // without CHORUS_SHM_PROBE means off: the user chose the sizes.
  ShmProbeMode shm_probe = ShmProbeMode::kCached;
  bool shm_probe_given = false;
  // The probe mode in force (the rule above).
  ShmProbeMode effective_shm_probe() const {
    return shm_allreduce_threshold_given && !shm_probe_given ? ShmProbeMode::kOff : shm_probe;
  }
  // CHORUS_HIERARCHICAL_ALLREDUCE: for jobs on several hosts, allreduce in
  // shared memory within each host and over MPI across hosts
  // (ops/shm/hierarchical_backend.h); for GPU memory over NCCL, NCCL within
  // each host and MPI across (ops/device_hierarchical_backend.h). auto (default: when every host has the
  // same number of ranks, at least 2), on (every allreduce on host memory;
  // init fails if hosts hold different numbers of ranks), off (flat MPI).
  ShmAllreduceMode hierarchical_allreduce = ShmAllreduceMode::kAuto;
  // CHORUS_AUTOTUNE: 0 (default) or 1. During the first steps rank 0
  // searches the fusion threshold, the cycle time and the allreduce
  // algorithm for the most bytes reduced per second, then keeps the best
  // (autotuner.h). Settings set explicitly in the environment stay fixed.
  bool autotune = false;
  // CHORUS_AUTOTUNE_LOG: CSV file rank 0 writes every sample to; empty = none.
  std::string autotune_log_path;
  // CHORUS_AUTOTUNE_WARMUP_STEPS: training steps ignored before the first sample.
  int64_t autotune_warmup_steps = 5;
  // CHORUS_AUTOTUNE_STEPS_PER_SAMPLE: steps measured for each sample (at least).
  int64_t autotune_steps_per_sample = 4;
  // CHORUS_AUTOTUNE_MIN_SAMPLE_MS: a sample also lasts at least this long, so
  // that tiny steps are measured over many scheduler ticks.
  double autotune_min_sample_ms = 100.0;
  // CHORUS_AUTOTUNE_SAMPLES: settings measured in all (re-measurements included).
  int64_t autotune_samples = 20;

  // CHORUS_CUDA_DEVICE: the index (among the GPUs CUDA_VISIBLE_DEVICES
  // shows this process) of the GPU this rank binds to; -1 (unset): its local
  // rank modulo the number of GPUs it sees.
  int64_t cuda_device = -1;
  // CHORUS_GPU_BACKEND: auto (default), nccl or staged.
  GpuBackendMode gpu_backend = GpuBackendMode::kAuto;

  // The CHORUS_* variables that were set in the environment, in the order
  // from_env reads them: explicit choices the autotuner must not change.
  std::vector<std::string> explicitly_set;
  bool was_set(const std::string& variable) const;

  using Lookup = std::function<const char*(const char* name)>;
  // Reads every variable through `lookup` (std::getenv by default).
  static Status from_env(Config* out, const Lookup& lookup = nullptr);
};

}  // namespace chorus
