// chorus_bench's output on rank 0: a readable table on stdout and,
// optionally, every figure as JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_measure.h"
#include "bench_options.h"

namespace chorus_bench {

struct RunInfo {
  int ranks = 1;
  std::string date;
  std::string host;
  std::string load_average;
  std::string glibc_tunables;             // "(unset)" when not set
  std::string mpi_library;                // first line of MPI_Get_library_version
  std::vector<std::string> chorus_env;    // CHORUS_* variables in effect
};

struct Results {
  RunInfo info;
  Options options;
  std::vector<AllreduceRow> allreduce;
  std::vector<int> process_set_ranks;  // --process-set: its members (empty: not run)
  std::vector<ProcessSetRow> process_set;
  SmallStepResult small;
  LatencyResult latency;
  IdleResult idle;
};

void print_header(const RunInfo& info, const Options& options);
void print_allreduce(const std::vector<AllreduceRow>& rows, int ranks);
// busbw of each with its own number of ranks.
void print_process_set(const std::vector<ProcessSetRow>& rows, int ranks, const std::vector<int>& members);
void print_small_step(const SmallStepResult& small);
void print_latency(const LatencyResult& latency);
void print_idle(const IdleResult& idle);

// The results' JSON: keys in insertion order, so the file reads in the order
// it is written.
using Json = nlohmann::ordered_json;

// {"median_s", "min_s", "samples"}.
Json stats_json(const Stats& s);
// The run's description ("benchmark", "np", "date", ...) that every results
// file starts with.
Json run_json(const char* benchmark, const RunInfo& info);

// Writes `json` (indented) to `path`; false with `error` when it cannot.
bool write_json_file(const Json& json, const std::string& path, std::string* error);
// Every figure of a run.
bool write_json(const Results& results, const std::string& path, std::string* error);

}  // namespace chorus_bench
