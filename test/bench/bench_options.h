// chorus_bench's command line (Boost.Program_options).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace chorus_bench {

struct Options {
  // "allreduce" (the default: sweep, 200 x 4 KiB step, latency, idle CPU) or
  // "p2p" (send/recv ping-pong, bench_p2p.h).
  std::string mode = "allreduce";
  std::vector<size_t> p2p_sizes;  // bytes, for --mode p2p
  std::vector<size_t> sizes;  // bytes, each a multiple of 4 (float32)
  int repeats = 20;           // timed rounds per measurement
  int warmup = 3;             // untimed rounds before them
  int latency_repeats = 1000; // timed rounds of the 4 KiB latency measurement
  double idle_seconds = 2.0;  // length of the idle-CPU window; 0 skips it
  std::string json_path;      // empty: no JSON
  bool skip_large = false;    // drop sizes above kLargeBytes
  // --process-set: also sweep the sizes on a process set, next to the world:
  // "half" (the first size/2 ranks) or a comma-separated rank list; empty: no.
  std::string process_set;
};

// Sizes above this are "large" (--skip-large leaves them out).
constexpr size_t kLargeBytes = size_t{16} << 20;

enum class ParseResult { kRun, kHelp, kError };

// Parses argv into `options`. kHelp: `usage` holds the help text. kError:
// `error` holds a message naming the option and what it accepts.
ParseResult parse_options(int argc, char** argv, Options* options, std::string* usage,
                          std::string* error);

}  // namespace chorus_bench
