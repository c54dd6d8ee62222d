// chorus_bench: Chorus's allreduce against raw MPI_Allreduce in one run, on
// the same buffers, alternating the two. Run it under mpirun (see
// test/bench/run_bench.sh and docs/BENCHMARKING.md). It measures:
//   a. allreduce float32 sum of each --sizes size: time, busbw, ratio;
//      with --process-set, the same sizes on a process set beside the
//      world's, busbw of each;
//   b. a step of 200 allreduces of 4 KiB: Chorus (all submitted, then all
//      waited) vs 200 MPI_Allreduce calls vs one MPI_Allreduce of the packed
//      800 KiB (pack and unpack copies included);
//   c. the latency of one 4 KiB allreduce, submit to wait;
//   d. the CPU an idle rank burns (nothing queued, main thread asleep), as %
//      of one core, per rank: its background thread alone, and the whole
//      process.
// With --mode p2p it measures point-to-point instead (bench_p2p.h).
// The application owns MPI here (MPI_THREAD_MULTIPLE), as a training program
// that also makes its own MPI calls would.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "bench_measure.h"
#include "bench_options.h"
#include "bench_p2p.h"
#include "bench_report.h"
#include "bench_util.h"
#include "chorus/chorus.h"

namespace chorus_bench {
namespace {

std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(buf, &length);
  std::string text(buf, static_cast<size_t>(length > 0 ? length : 0));
  const size_t end = text.find_first_of("\n,");
  return end == std::string::npos ? text : text.substr(0, end);
}

RunInfo run_info(int ranks) {
  RunInfo info;
  info.ranks = ranks;
  info.date = local_date_time();
  info.host = host_name();
  info.load_average = load_average();
  info.glibc_tunables = env_or("GLIBC_TUNABLES", "(unset)");
  info.mpi_library = mpi_library_version();
  info.chorus_env = chorus_environment();
  return info;
}

// --process-set's members: "half" is the first ranks / 2 ranks.
bool process_set_members(const std::string& spec, int ranks, std::vector<int>* out, std::string* error) {
  out->clear();
  if (spec == "half") {
    if (ranks < 2) {
      *error = "'half' needs at least 2 ranks, this job has " + std::to_string(ranks);
      return false;
    }
    for (int r = 0; r < ranks / 2; ++r) out->push_back(r);
    return true;
  }
  std::stringstream stream(spec);
  std::string item;
  while (std::getline(stream, item, ',')) {
    char* end = nullptr;
    const long r = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || r < 0 || r >= ranks) {
      *error = "'" + item + "' is not a rank of this job; expected 'half' or ranks in [0, " +
               std::to_string(ranks) + ") separated by commas";
      return false;
    }
    out->push_back(static_cast<int>(r));
  }
  std::sort(out->begin(), out->end());
  if (out->empty() || std::adjacent_find(out->begin(), out->end()) != out->end()) {
    *error = "'" + spec + "': expected distinct ranks, at least one";
    return false;
  }
  return true;
}

// Every rank runs every measurement; rank 0 reports. Returns the exit code.
int run(MPI_Comm comm, const Options& options) {
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  const bool report = rank == 0;
  if (chorus::size() != ranks || chorus::rank() != rank) {
    std::fprintf(stderr, "chorus_bench: rank %d: Chorus reports rank %d of %d, MPI rank %d of %d\n",
                 rank, chorus::rank(), chorus::size(), rank, ranks);
    return 1;
  }

  Results results;
  results.options = options;
  results.info = run_info(ranks);  // the load average before our own load
  if (report) print_header(results.info, options);

  std::string error;
  if (options.mode == "p2p") {
    if (ranks < 2) {
      std::fprintf(stderr, "chorus_bench: --mode p2p needs at least 2 ranks\n");
      return 2;
    }
    std::vector<P2PRow> rows;
    if (!p2p_pingpong(comm, options, &rows, &error)) {
      std::fprintf(stderr, "chorus_bench: wrong result, no figures measured: %s\n", error.c_str());
      return 1;
    }
    if (report) print_p2p(rows);
    if (report && !options.json_path.empty()) {
      if (!write_p2p_json(results.info, options, rows, options.json_path, &error)) {
        std::fprintf(stderr, "chorus_bench: %s\n", error.c_str());
        return 1;
      }
      std::printf("\nJSON written to %s\n", options.json_path.c_str());
    }
    return 0;
  }
  Bench bench(comm, options);
  if (!bench.prepare(&error)) {
    std::fprintf(stderr, "chorus_bench: wrong result, no figures measured: %s\n", error.c_str());
    return 1;
  }
  results.allreduce = bench.allreduce_sweep();
  if (report) print_allreduce(results.allreduce, ranks);
  if (!options.process_set.empty()) {
    if (!process_set_members(options.process_set, ranks, &results.process_set_ranks, &error)) {
      if (report) std::fprintf(stderr, "chorus_bench: --process-set: %s\n", error.c_str());
      return 2;
    }
    const chorus::ProcessSet set = chorus::add_process_set(results.process_set_ranks);
    results.process_set = bench.process_set_sweep(set, results.process_set_ranks);
    if (report) print_process_set(results.process_set, ranks, results.process_set_ranks);
    chorus::remove_process_set(set);
  }
  results.small = bench.small_tensors_step();
  if (report) print_small_step(results.small);
  results.latency = bench.latency();
  if (report) print_latency(results.latency);
  results.idle = bench.idle_cpu();
  if (report) print_idle(results.idle);

  if (report && !options.json_path.empty()) {
    if (!write_json(results, options.json_path, &error)) {
      std::fprintf(stderr, "chorus_bench: %s\n", error.c_str());
      return 1;
    }
    std::printf("\nJSON written to %s\n", options.json_path.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace chorus_bench

int main(int argc, char** argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "chorus_bench: MPI_Init_thread failed\n");
    return 1;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  chorus_bench::Options options;
  std::string usage;
  std::string error;
  switch (chorus_bench::parse_options(argc, argv, &options, &usage, &error)) {
    case chorus_bench::ParseResult::kHelp:
      if (rank == 0) std::printf("%s", usage.c_str());
      MPI_Finalize();
      return 0;
    case chorus_bench::ParseResult::kError:
      if (rank == 0) std::fprintf(stderr, "chorus_bench: %s\n", error.c_str());
      MPI_Finalize();
      return 2;
    case chorus_bench::ParseResult::kRun:
      break;
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) {
      std::fprintf(stderr, "chorus_bench: MPI provides thread level %d, not MPI_THREAD_MULTIPLE "
                           "(raw MPI calls beside Chorus's background thread need it)\n", provided);
    }
    MPI_Finalize();
    return 1;
  }

  // The benchmark's raw MPI calls use a communicator of their own.
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int rc = 0;
  try {
    chorus::init();
    rc = chorus_bench::run(comm, options);
    chorus::shutdown();
  } catch (const std::exception& e) {
    // Other ranks may wait in a collective for this one: end the whole job.
    std::fprintf(stderr, "chorus_bench: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return rc;
}
