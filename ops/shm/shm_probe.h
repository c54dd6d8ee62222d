// The start-up probe: with CHORUS_SHM_ALLREDUCE=auto on one host, which of
// the shared-memory and the MPI allreduce is faster at which size, whether
// the shared-memory engine stores into its slots with streaming or plain
// stores, and up to which size it takes its one-stage path, are measured on
// the machine at hand instead of fixed in the code: the answers differ
// between CPUs and with how many ranks share the cores (docs/MEASUREMENTS.md,
// "Streaming stores into reused slots", "One meeting for a small allreduce";
// issue 39).
//
// What: float32 sums of 4 KiB, 16 KiB, 64 KiB, 256 KiB, 1 MiB, 4 MiB and
// 16 MiB, each through the MPI path (the backend the shared-memory one
// falls back to) and through the shared-memory engine with plain and with
// streaming stores, up to 64 KiB also through its one-stage path, from an
// input just written (as a gradient is: from a cold input 16 MiB took 20 ms
// instead of 5 here), each after a barrier;
// one untimed round over all of them, then five timed, interleaved; a rank keeps its
// best time per size and path, or up to 64 KiB the median of eight calls a
// round. 16 MiB speaks for every larger size (at 4
// MiB the paths are within noise of each other on the Intel VM, and larger
// sizes are where the engine gains most). The small sizes are single
// gradients and latency-bound ops, where the shared-memory engine was
// faster than MPI on the AMD VM and a fixed 32 KiB floor had given them to
// MPI (docs/MEASUREMENTS.md, "Small allreduces by measurement"). About
// 0.3-0.5 s at np=2 on a 2-core VM, once per machine and settings: the
// choice is cached (shm_probe_cache.h).
// How the ranks agree: every rank's times are combined by MPI_MAX (a
// collective is as fast as its slowest rank), rank 0 applies the rule
// (shm_probe_choice.h) and broadcasts the samples it chose from, as the
// cache file holds them, and every rank derives the same choice from the
// same text. With a cache, rank 0 alone reads it and broadcasts it. So the
// ranks choose alike even when their own clocks say otherwise.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "chorus/status.h"
#include "base/config.h"
#include "ops/shm/shm_backend.h"
#include "ops/shm/shm_probe_choice.h"

namespace chorus {

struct ShmProbeOptions {
  std::vector<int64_t> sizes{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20};
  int repeats = 5;  // timed rounds per size and path, after one untimed
  // Sizes up to this are also timed through the engine's one-stage path,
  // `small_calls` times per round, and judged by their median.
  int64_t one_stage_up_to = 64 << 10;
  int small_calls = 8;
  // A test hook (CHORUS_TEST_SHM_PROBE_SKEW): this rank's own times of a
  // path are multiplied by these before the ranks combine them, so a test
  // can give ranks measurements that disagree.
  double mpi_skew = 1.0;
  double shm_skew = 1.0;
};

// Collective over `comm` (the backend's ranks): this rank's best times,
// combined over the ranks by MPI_MAX, into `samples` (same on every rank).
Status measure_allreduce_paths(MPI_Comm comm, ShmBackend* backend, const ShmProbeOptions& options,
                               std::vector<ShmProbeSample>* samples);

// Collective over `comm`: reads CHORUS_TEST_SHM_PROBE_SKEW, loads rank 0's
// cache (mode cached) or measures, agrees as above, writes the cache when it
// measured, applies the choice to `backend` (store mode and size ranges on
// top of `selection`) and logs it on rank 0. `choice` gets it when not null.
Status probe_and_choose(const Config& config, MPI_Comm comm, int rank, int ranks, int64_t chunk_bytes,
                        const ShmAllreduceSelection& selection, ShmBackend* backend, ShmProbeChoice* choice = nullptr);

}  // namespace chorus
