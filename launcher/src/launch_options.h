// chorusrun's command line: `chorusrun [options] [--] PROGRAM ARGS...`.
// The first word that is not an option (or everything after "--") starts
// the program; options after it belong to the program.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace chorus::launcher {

struct LaunchOptions {
  std::optional<int> np;
  std::string host_list;  // -H
  std::string hostfile;
  std::string launcher;   // "mpirun", "srun", or "" to choose
  // Validated CHORUS_* variables from the runtime flags, in flag order.
  std::vector<std::pair<std::string, std::string>> runtime_variables;
  std::vector<std::string> exports;  // -x NAME[=VALUE], as given
  std::string network_interface;
  std::vector<std::string> mpi_args;  // --mpi-args, split into words
  std::string report_address;
  std::string bind_to = "auto";  // auto, none, core or socket
  double start_timeout_seconds = 0.0;  // 0: no start timeout
  std::optional<bool> tag_output;
  bool dry_run = false;
  bool verbose = false;
  bool check_build = false;
  bool help = false;
  std::vector<std::string> program;
};

// Throws UsageError for anything malformed or missing.
LaunchOptions parse_launch_options(const std::vector<std::string>& args);
std::string launch_usage();

// Splits --mpi-args into words like a POSIX shell would (quotes and
// backslashes, no expansions); throws on an unclosed quote.
std::vector<std::string> split_words(const std::string& text, const std::string& origin);

}  // namespace chorus::launcher
