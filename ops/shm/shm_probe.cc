#include "ops/shm/shm_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "base/logging.h"
#include "ops/shm/shm_probe_cache.h"

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;

Status mpi_call(const char* what, int code) {
  if (code == MPI_SUCCESS) return Status::OK();
  return Status::Internal(std::string("shared-memory probe: ") + what + " failed (MPI error " + std::to_string(code) + ")");
}

// CHORUS_TEST_SHM_PROBE_SKEW: "mpi=F", "shm=F" or both, comma-separated.
Status read_skew(ShmProbeOptions* options) {
  const char* raw = std::getenv("CHORUS_TEST_SHM_PROBE_SKEW");
  if (raw == nullptr) return Status::OK();
  const std::string text(raw);
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    const size_t eq = item.find('=');
    const std::string path = item.substr(0, eq);
    char* rest = nullptr;
    const double factor = eq == std::string::npos ? 0.0 : std::strtod(item.c_str() + eq + 1, &rest);
    const bool number = eq != std::string::npos && rest != nullptr && *rest == '\0' && eq + 1 < item.size();
    if ((path != "mpi" && path != "shm") || !number || !(factor > 0.0) || factor > 1e6) {
      return Status::InvalidArgument("CHORUS_TEST_SHM_PROBE_SKEW='" + text +
                                     "' is invalid: expected mpi=F and/or shm=F, comma-separated, F a factor in (0, 1e6]");
    }
    (path == "mpi" ? options->mpi_skew : options->shm_skew) = factor;
    at = end + 1;
  }
  return Status::OK();
}

Status broadcast_text(MPI_Comm comm, std::string* text) {
  long long size = static_cast<long long>(text->size());
  CHORUS_RETURN_IF_ERROR(mpi_call("MPI_Bcast", MPI_Bcast(&size, 1, MPI_LONG_LONG, 0, comm)));
  text->resize(static_cast<size_t>(size));
  if (size == 0) return Status::OK();
  return mpi_call("MPI_Bcast", MPI_Bcast(&(*text)[0], static_cast<int>(size), MPI_CHAR, 0, comm));
}

}  // namespace

Status measure_allreduce_paths(MPI_Comm comm, ShmBackend* backend, const ShmProbeOptions& options,
                               std::vector<ShmProbeSample>* samples) {
  const int64_t largest = *std::max_element(options.sizes.begin(), options.sizes.end());
  std::vector<float> input(static_cast<size_t>(largest / 4), 1.0f);
  std::vector<float> output(input.size());
  ShmAllreduce& engine = backend->engine();
  const bool streaming_before = engine.streaming_stores();
  const int64_t one_stage_before = engine.one_stage_bytes();
  enum Path { kMpi, kPlain, kStreaming, kOneStage, kPaths };
  // Per size and path: this rank's timings, in microseconds.
  std::vector<std::vector<double>> times(options.sizes.size() * kPaths);
  Status status;
  // Round 0 warms every size and path up (first touches, MPI's buffers);
  // the timed rounds then interleave sizes and paths, each round in another
  // order of the paths, so a noisy moment or the path that runs first after
  // another size spreads over all of them instead of skewing one.
  for (int round = 0; round <= options.repeats && status.ok(); ++round) {
    for (size_t i = 0; i < options.sizes.size() && status.ok(); ++i) {
      const int64_t count = options.sizes[i] / 4;
      const bool small = options.sizes[i] <= options.one_stage_up_to;
      for (int turn = 0; turn < kPaths && status.ok(); ++turn) {
        const int path = (turn + round) % kPaths;
        if (path == kOneStage && !small) continue;
        for (int call = 0; call < (small ? options.small_calls : 1) && status.ok(); ++call) {
          // Each allreduce starts from an input its rank has just written, as
          // a gradient is after backward (and chorus_bench measures).
          std::fill(input.begin(), input.begin() + count, static_cast<float>(round + path));
          status = mpi_call("MPI_Barrier", MPI_Barrier(comm));
          if (!status.ok()) break;
          const Clock::time_point start = Clock::now();
          if (path == kMpi) {
            status = backend->mpi().allreduce(input.data(), output.data(), count, DataType::kFloat32, ReduceOp::kSum, 1.0)->wait();
          } else {
            engine.set_streaming_stores(path == kStreaming);
            engine.set_one_stage_bytes(path == kOneStage ? options.sizes[i] : 0);
            status = engine.allreduce(input.data(), output.data(), count, DataType::kFloat32, ReduceOp::kSum);
          }
          const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() *
                            (path == kMpi ? options.mpi_skew : options.shm_skew);
          if (round > 0) times[i * kPaths + path].push_back(us);
        }
      }
    }
  }
  // Large sizes: the best of the rounds. Small ones: the median of their
  // many calls, since at a few microseconds the best is luck (the best of
  // five favoured the one-stage path where its median was slower).
  std::vector<double> best(times.size(), 0.0);
  for (size_t k = 0; k < times.size(); ++k) {
    std::vector<double>& t = times[k];
    if (t.empty()) continue;
    std::sort(t.begin(), t.end());
    best[k] = options.sizes[k / kPaths] <= options.one_stage_up_to ? t[t.size() / 2] : t.front();
  }
  engine.set_streaming_stores(streaming_before);
  engine.set_one_stage_bytes(one_stage_before);
  CHORUS_RETURN_IF_ERROR(status);
  CHORUS_RETURN_IF_ERROR(mpi_call(
      "MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, best.data(), static_cast<int>(best.size()), MPI_DOUBLE, MPI_MAX, comm)));
  samples->clear();
  for (size_t i = 0; i < options.sizes.size(); ++i) {
    samples->push_back({options.sizes[i], best[i * kPaths + kMpi], best[i * kPaths + kPlain],
                        best[i * kPaths + kStreaming], best[i * kPaths + kOneStage]});
  }
  std::sort(samples->begin(), samples->end(),
            [](const ShmProbeSample& a, const ShmProbeSample& b) { return a.bytes < b.bytes; });
  return Status::OK();
}

Status probe_and_choose(const Config& config, MPI_Comm comm, int rank, int ranks, int64_t chunk_bytes,
                        const ShmAllreduceSelection& selection, ShmBackend* backend, ShmProbeChoice* choice) {
  ShmProbeOptions options;
  const Status skew = read_skew(&options);
  // Every rank must go on to the same collectives: a bad value on one rank
  // fails all of them.
  int bad = skew.ok() ? 0 : 1;
  CHORUS_RETURN_IF_ERROR(mpi_call("MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm)));
  if (!skew.ok()) return skew;
  if (bad != 0) return Status::Aborted("CHORUS_TEST_SHM_PROBE_SKEW is invalid on another rank; its error says why");

  const Clock::time_point start = Clock::now();
  const std::string key = shm_probe_cache_key(ranks, chunk_bytes);
  const std::string path = shm_probe_cache_path(key);
  std::string text;  // rank 0's samples, as the cache holds them; empty: measure
  if (rank == 0 && config.effective_shm_probe() == ShmProbeMode::kCached) {
    ShmProbeChoice cached;
    std::string warning;
    if (load_shm_probe(path, key, &cached, &warning)) {
      text = cached.serialize();
    } else if (!warning.empty()) {
      CHORUS_LOG(kWarning, warning << "; measuring again and rewriting it");
    }
  }
  CHORUS_RETURN_IF_ERROR(broadcast_text(comm, &text));
  const bool cached = !text.empty();
  if (!cached) {
    std::vector<ShmProbeSample> samples;
    CHORUS_RETURN_IF_ERROR(measure_allreduce_paths(comm, backend, options, &samples));
    if (rank == 0) text = choose_allreduce_paths(samples).serialize();
    CHORUS_RETURN_IF_ERROR(broadcast_text(comm, &text));
  }
  ShmProbeChoice agreed;
  if (!ShmProbeChoice::parse(text, &agreed)) {
    return Status::Internal("shared-memory probe: rank 0's samples did not parse: '" + text + "'");
  }
  backend->engine().set_streaming_stores(agreed.streaming_stores);
  backend->engine().set_one_stage_bytes(agreed.one_stage_bytes);
  ShmAllreduceSelection chosen = selection;
  chosen.measured = agreed.ranges;
  backend->choose(chosen);
  if (rank == 0) {
    if (!cached) {
      const Status stored = store_shm_probe(path, key, agreed);
      if (!stored.ok()) CHORUS_LOG(kWarning, "shared-memory probe: cannot cache the result: " << stored.message());
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    CHORUS_LOG(kInfo, "allreduce paths among " << ranks << " ranks "
                                               << (cached ? "from the cache " + path : "measured, cached in " + path)
                                               << " (" << ms << " ms): " << agreed.describe());
  }
  if (choice != nullptr) *choice = agreed;
  return Status::OK();
}

}  // namespace chorus
