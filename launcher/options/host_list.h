// Hosts and their slots, from -H ("a:2,b:4") or a hostfile ("a slots=2").
#pragma once

#include <string>
#include <vector>

namespace chorus::launcher {

struct Host {
  std::string name;
  int slots = 1;
  // Where the entry came from, for error messages: "-H entry 'a:2'",
  // "hosts.txt line 3 'a slots=2'".
  std::string origin;
};

// "host[:slots],..." ; a host without ":slots" has 1 slot.
std::vector<Host> parse_host_list(const std::string& text);
// Lines "host [slots=N]"; '#' starts a comment; blank lines are ignored.
// `source` names the file in messages.
std::vector<Host> parse_hostfile(const std::string& content, const std::string& source);
std::vector<Host> read_hostfile(const std::string& path);

// A host name or IPv4 address: letters, digits, '.', '-', '_'.
bool is_valid_host_name(const std::string& name);

// Throws when a host appears twice (naming both entries).
void check_no_duplicates(const std::vector<Host>& hosts);
int total_slots(const std::vector<Host>& hosts);
// Throws when the hosts have fewer than np slots, listing them.
void check_enough_slots(const std::vector<Host>& hosts, int np);
// "a:2,b:4", the form mpirun -H takes.
std::string format_host_list(const std::vector<Host>& hosts);

// Parses a positive decimal integer (no sign, no suffix); false otherwise.
bool parse_positive_int(const std::string& text, int* out);

}  // namespace chorus::launcher
