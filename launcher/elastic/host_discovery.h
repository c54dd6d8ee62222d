// Where an elastic job's hosts come from: a discovery script (as Horovod's
// --host-discovery-script), -H, a hostfile or the Slurm allocation. The
// script prints one "host[:slots]" a line (slots default to 1; blank lines
// and '#' comments are ignored) and exits 0; anything else is an error that
// names the script and the line.
#pragma once

#include <string>
#include <vector>

#include "options/host_list.h"

namespace chorus::launcher {

// Parses a discovery script's output; throws UsageError naming `script`, the
// line number and the line for anything that is not "host[:slots]", and for
// a host listed twice. An empty list is valid (no host is available now).
std::vector<Host> parse_discovered_hosts(const std::string& output, const std::string& script);

// Runs `script` (no arguments, stdout captured, stderr passed through) and
// parses what it printed. Throws UsageError when it cannot be run, exits
// other than 0, is killed, or takes longer than timeout_seconds (it is then
// killed with its process group).
std::vector<Host> run_discovery_script(const std::string& script, double timeout_seconds = 30.0);

}  // namespace chorus::launcher
