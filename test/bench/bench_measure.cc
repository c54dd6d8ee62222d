#include "bench_measure.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "support/thread_stats.h"

namespace chorus_bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The verification pattern: small integers, exact in float32.
float pattern(int rank, size_t slot, size_t i) {
  return static_cast<float>(rank + 1 + static_cast<int>((slot + i) % 8));
}
float expected_sum(int ranks, size_t slot, size_t i) {
  return static_cast<float>(ranks * (ranks + 1) / 2 + ranks * static_cast<int>((slot + i) % 8));
}

void fill_pattern(std::vector<float>* buffer, int rank, size_t slot) {
  for (size_t i = 0; i < buffer->size(); ++i) (*buffer)[i] = pattern(rank, slot, i);
}

// Records the first mismatch of `buffer` in `error` (if none was recorded yet).
void check_sum(const std::vector<float>& buffer, int ranks, size_t slot, const std::string& name,
               std::string* error) {
  if (!error->empty()) return;
  for (size_t i = 0; i < buffer.size(); ++i) {
    const float want = expected_sum(ranks, slot, i);
    if (buffer[i] != want) {
      *error = "Chorus allreduce of '" + name + "' gave " + std::to_string(buffer[i]) +
               " at element " + std::to_string(i) + ", expected " + std::to_string(want);
      return;
    }
  }
}

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto to_seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return to_seconds(usage.ru_utime) + to_seconds(usage.ru_stime);
}

// The largest figure, or -1 (unknown) if any rank's is unknown.
double max_or_unknown(const std::vector<double>& per_rank) {
  double max = 0.0;
  for (double v : per_rank) {
    if (v < 0.0) return -1.0;
    max = std::max(max, v);
  }
  return max;
}

chorus::Tensor float_tensor(std::vector<float>* buffer) {
  return chorus::Tensor(buffer->data(), chorus::DataType::kFloat32,
                        {static_cast<int64_t>(buffer->size())});
}

}  // namespace

Bench::Bench(MPI_Comm comm, const Options& options) : comm_(comm), options_(options) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  sum_.op = chorus::ReduceOp::kSum;
}

void Bench::mpi_allreduce(float* data, size_t count) {
  const int rc = MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm_);
  if (rc != MPI_SUCCESS) throw std::runtime_error("MPI_Allreduce failed with code " + std::to_string(rc));
}

bool Bench::prepare(std::string* error) {
  std::string mismatch;
  // Allocation and first touch happen here, never inside a timed region.
  for (size_t bytes : options_.sizes) {
    sweep_buffers_.emplace_back(bytes / sizeof(float));
    sweep_names_.push_back("bench.allreduce." + std::to_string(bytes));
  }
  for (auto& buffer : sweep_buffers_) sweep_tensors_.push_back(float_tensor(&buffer));
  if (rank_ == 0 && !options_.sizes.empty()) {
    copy_target_.assign(*std::max_element(options_.sizes.begin(), options_.sizes.end()) / sizeof(float), 0.0f);
  }
  SmallStepResult shape;
  for (int t = 0; t < shape.tensors; ++t) {
    small_buffers_.emplace_back(shape.bytes_each / sizeof(float));
    small_names_.push_back("bench.small." + std::to_string(t));
  }
  for (auto& buffer : small_buffers_) small_tensors_.push_back(float_tensor(&buffer));
  small_handles_.resize(small_buffers_.size());
  fused_buffer_.assign(small_buffers_.size() * (shape.bytes_each / sizeof(float)), 0.0f);
  latency_buffer_.assign(LatencyResult().bytes / sizeof(float), 0.0f);
  latency_tensor_ = float_tensor(&latency_buffer_);

  // One verified Chorus allreduce per name (this also negotiates every name
  // once, as the first step of a training loop would).
  for (size_t s = 0; s < sweep_buffers_.size(); ++s) {
    fill_pattern(&sweep_buffers_[s], rank_, s);
    chorus::allreduce(sweep_names_[s], sweep_tensors_[s], sum_);
    check_sum(sweep_buffers_[s], size_, s, sweep_names_[s], &mismatch);
  }
  for (size_t t = 0; t < small_buffers_.size(); ++t) {
    fill_pattern(&small_buffers_[t], rank_, t);
    small_handles_[t] = chorus::allreduce_async(small_names_[t], small_tensors_[t], sum_);
  }
  for (size_t t = 0; t < small_buffers_.size(); ++t) {
    small_handles_[t].wait();
    check_sum(small_buffers_[t], size_, t, small_names_[t], &mismatch);
  }
  fill_pattern(&latency_buffer_, rank_, 0);
  chorus::allreduce(latency_name_, latency_tensor_, sum_);
  check_sum(latency_buffer_, size_, 0, latency_name_, &mismatch);

  // Zeros from here on: sums of zeros stay finite however often we repeat.
  for (auto& buffer : sweep_buffers_) std::fill(buffer.begin(), buffer.end(), 0.0f);
  for (auto& buffer : small_buffers_) std::fill(buffer.begin(), buffer.end(), 0.0f);
  std::fill(latency_buffer_.begin(), latency_buffer_.end(), 0.0f);

  int bad = mismatch.empty() ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm_);
  if (bad != 0) {
    *error = mismatch.empty() ? "another rank saw a wrong Chorus result"
                              : "rank " + std::to_string(rank_) + ": " + mismatch;
    return false;
  }
  return true;
}

std::vector<Stats> Bench::alternate(int warmup, int repeats,
                                    const std::vector<std::function<void()>>& variants,
                                    const std::function<void(size_t)>& before_each) {
  std::vector<std::vector<double>> samples(variants.size());
  for (auto& s : samples) s.reserve(static_cast<size_t>(repeats));
  for (int round = 0; round < warmup + repeats; ++round) {
    for (size_t v = 0; v < variants.size(); ++v) {
      if (before_each) before_each(v);
      MPI_Barrier(comm_);
      const Clock::time_point start = Clock::now();
      variants[v]();
      const double elapsed = seconds_since(start);
      if (round >= warmup) samples[v].push_back(elapsed);
    }
  }
  std::vector<Stats> out;
  for (auto& s : samples) {
    // A round is as slow as its slowest rank.
    MPI_Allreduce(MPI_IN_PLACE, s.data(), static_cast<int>(s.size()), MPI_DOUBLE, MPI_MAX, comm_);
    out.push_back(summarize(s));
  }
  return out;
}

std::vector<AllreduceRow> Bench::allreduce_sweep() {
  std::vector<AllreduceRow> rows;
  for (size_t s = 0; s < sweep_buffers_.size(); ++s) {
    std::vector<float>& buffer = sweep_buffers_[s];
    const chorus::Tensor& tensor = sweep_tensors_[s];
    const std::string& name = sweep_names_[s];
    // Every timed operation but the warm copy starts from its input just
    // written by its own rank, as a gradient is after backward. Without this,
    // each operation inherits the cache state the previous one left in the
    // shared buffer. Measured at np=2, 16 MiB: a buffer that MPI_Allreduce's
    // single-copy transport had just used cost the shared-memory allreduce
    // ~0.3 ms more than one it had used itself. The reverse made MPI ~0.5 ms
    // faster. So the order of the variants decided part of their ratio.
    auto copy = [&] {
      if (rank_ == 0) std::memcpy(copy_target_.data(), buffer.data(), buffer.size() * sizeof(float));
    };
    const std::vector<Stats> stats = alternate(
        options_.warmup, options_.repeats,
        {[&] { chorus::allreduce_async(name, tensor, sum_).wait(); },
         [&] { mpi_allreduce(buffer.data(), buffer.size()); }, copy, copy},
        [&](size_t variant) {
          if (variant < 3) std::fill(buffer.begin(), buffer.end(), 0.0f);
        });
    AllreduceRow row;
    row.bytes = options_.sizes[s];
    row.chorus = stats[0];
    row.mpi = stats[1];
    row.memcpy = stats[2];
    row.memcpy_warm = stats[3];
    rows.push_back(row);
  }
  return rows;
}

std::vector<ProcessSetRow> Bench::process_set_sweep(const chorus::ProcessSet& set,
                                                    const std::vector<int>& members) {
  const bool member = std::find(members.begin(), members.end(), rank_) != members.end();
  chorus::AllreduceOptions on_set = sum_;
  on_set.process_set = set;
  std::vector<ProcessSetRow> rows;
  for (size_t s = 0; s < sweep_buffers_.size(); ++s) {
    std::vector<float>& buffer = sweep_buffers_[s];
    const chorus::Tensor& tensor = sweep_tensors_[s];
    const std::string& name = sweep_names_[s];  // the same name in both sets
    const std::vector<Stats> stats = alternate(
        options_.warmup, options_.repeats,
        {[&] { chorus::allreduce_async(name, tensor, sum_).wait(); },
         [&] {
           if (member) chorus::allreduce_async(name, tensor, on_set).wait();
         }},
        [&](size_t) { std::fill(buffer.begin(), buffer.end(), 0.0f); });
    ProcessSetRow row;
    row.bytes = options_.sizes[s];
    row.world = stats[0];
    row.set = stats[1];
    rows.push_back(row);
  }
  return rows;
}

SmallStepResult Bench::small_tensors_step() {
  SmallStepResult result;
  const size_t count = result.bytes_each / sizeof(float);
  auto chorus_step = [&] {
    for (size_t t = 0; t < small_tensors_.size(); ++t) {
      small_handles_[t] = chorus::allreduce_async(small_names_[t], small_tensors_[t], sum_);
    }
    for (auto& handle : small_handles_) handle.wait();
  };
  auto mpi_separate = [&] {
    for (auto& buffer : small_buffers_) mpi_allreduce(buffer.data(), count);
  };
  auto mpi_fused = [&] {
    for (size_t t = 0; t < small_buffers_.size(); ++t) {
      std::memcpy(fused_buffer_.data() + t * count, small_buffers_[t].data(), result.bytes_each);
    }
    mpi_allreduce(fused_buffer_.data(), fused_buffer_.size());
    for (size_t t = 0; t < small_buffers_.size(); ++t) {
      std::memcpy(small_buffers_[t].data(), fused_buffer_.data() + t * count, result.bytes_each);
    }
  };
  const std::vector<Stats> stats =
      alternate(options_.warmup, options_.repeats, {chorus_step, mpi_separate, mpi_fused});
  result.chorus = stats[0];
  result.mpi_separate = stats[1];
  result.mpi_fused = stats[2];
  return result;
}

LatencyResult Bench::latency() {
  LatencyResult result;
  const std::vector<Stats> stats = alternate(
      options_.warmup, options_.latency_repeats,
      {[&] { chorus::allreduce_async(latency_name_, latency_tensor_, sum_).wait(); },
       [&] { mpi_allreduce(latency_buffer_.data(), latency_buffer_.size()); }});
  result.chorus = stats[0];
  result.mpi = stats[1];
  return result;
}

IdleResult Bench::idle_cpu() {
  IdleResult result;
  if (options_.idle_seconds <= 0.0) return result;
  result.measured = true;
  result.seconds = options_.idle_seconds;
  const std::string background = chorus_test::thread_dir_named("chorus-bg");
  const std::string heartbeat = chorus_test::thread_dir_named("chorus-hb");
  MPI_Barrier(comm_);
  // Let the last cycle of the runtime finish before the window opens.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const chorus_test::ThreadStats heartbeat_start = chorus_test::read_thread_stats(heartbeat);
  const chorus_test::ThreadStats background_start = chorus_test::read_thread_stats(background);
  const double cpu_start = cpu_seconds();
  const Clock::time_point wall_start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(options_.idle_seconds));
  const double cpu = cpu_seconds() - cpu_start;
  const chorus_test::ThreadStats background_end = chorus_test::read_thread_stats(background);
  const chorus_test::ThreadStats heartbeat_end = chorus_test::read_thread_stats(heartbeat);
  const double wall = seconds_since(wall_start);
  const bool heartbeat_ok = !heartbeat.empty() && heartbeat_start.ok && heartbeat_end.ok && wall > 0.0;
  // A rank that cannot read its background thread's figures reports -1
  // (the report prints "unknown"), so a missing figure is never read as 0.
  const bool background_ok = background_start.ok && background_end.ok && wall > 0.0;
  const double mine[5] = {
      wall > 0.0 ? 100.0 * cpu / wall : 0.0,
      background_ok ? 100.0 * 1e-9 * static_cast<double>(background_end.cpu_ns - background_start.cpu_ns) / wall
                    : -1.0,
      background_ok ? static_cast<double>(background_end.context_switches - background_start.context_switches)
                    : -1.0,
      heartbeat_ok ? 100.0 * 1e-9 * static_cast<double>(heartbeat_end.cpu_ns - heartbeat_start.cpu_ns) / wall : -1.0,
      heartbeat_ok ? static_cast<double>(heartbeat_end.context_switches - heartbeat_start.context_switches) : -1.0};
  std::vector<double> all(rank_ == 0 ? static_cast<size_t>(5 * size_) : 0);
  MPI_Gather(mine, 5, MPI_DOUBLE, all.data(), 5, MPI_DOUBLE, 0, comm_);
  for (size_t r = 0; 5 * r < all.size(); ++r) {
    result.percent_per_rank.push_back(all[5 * r]);
    result.background_percent_per_rank.push_back(all[5 * r + 1]);
    result.background_wakeups_per_rank.push_back(all[5 * r + 2]);
    result.heartbeat_percent_per_rank.push_back(all[5 * r + 3]);
    result.heartbeat_wakeups_per_rank.push_back(all[5 * r + 4]);
  }
  result.heartbeat_max_percent = max_or_unknown(result.heartbeat_percent_per_rank);
  result.heartbeat_max_wakeups = max_or_unknown(result.heartbeat_wakeups_per_rank);
  result.max_percent = max_or_unknown(result.percent_per_rank);
  result.background_max_percent = max_or_unknown(result.background_percent_per_rank);
  result.background_max_wakeups = max_or_unknown(result.background_wakeups_per_rank);
  return result;
}

}  // namespace chorus_bench
