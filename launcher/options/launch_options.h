// chorusrun's command line: `chorusrun [options] [--] PROGRAM ARGS...`.
// The first word that is not an option (or everything after "--") starts
// the program; options after it belong to the program.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace chorus::launcher {

// chorusrun --elastic: restart the job on the surviving (or newly listed)
// hosts instead of ending it when a host fails. See docs/DESIGN.md,
// "Elastic training".
struct ElasticOptions {
  bool enabled = false;
  int min_np = 1;
  std::optional<int> max_np;           // none: as many ranks as the hosts have slots
  std::string discovery_script;        // prints "host[:slots]" lines; "" for -H/--hostfile/Slurm
  double discovery_interval_seconds = 5.0;  // how often the script runs while the job does
  // A host whose rank failed is left out this long; after that a discovery
  // script that lists it again brings it back (static host lists never do).
  double host_cooldown_seconds = 60.0;
  int max_restarts = 5;  // restarts after failures (growing at a commit is not counted)
};

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
  ElasticOptions elastic;
  std::vector<std::string> program;
};

// Throws UsageError for anything malformed or missing.
LaunchOptions parse_launch_options(const std::vector<std::string>& args);
std::string launch_usage();

// Splits --mpi-args into words like a POSIX shell would (quotes and
// backslashes, no expansions); throws on an unclosed quote.
std::vector<std::string> split_words(const std::string& text, const std::string& origin);

}  // namespace chorus::launcher
