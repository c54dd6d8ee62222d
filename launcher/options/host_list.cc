#include "options/host_list.h"

#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

#include "options/usage_error.h"

namespace chorus::launcher {
namespace {

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

int parse_slots(const std::string& text, const std::string& origin) {
  int slots = 0;
  if (!parse_positive_int(text, &slots)) {
    throw UsageError(origin + ": slots must be a positive integer, got '" + text + "'");
  }
  return slots;
}

void check_host_name(const std::string& name, const std::string& origin) {
  if (!is_valid_host_name(name)) {
    throw UsageError(origin + ": '" + name +
                     "' is not a host name (expected letters, digits, '.', '-' or '_')");
  }
}

}  // namespace

bool parse_positive_int(const std::string& text, int* out) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  int value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (result.ec != std::errc() || result.ptr != text.data() + text.size() || value <= 0) return false;
  *out = value;
  return true;
}

bool is_valid_host_name(const std::string& name) {
  if (name.empty() || name.front() == '-' || name.front() == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::vector<Host> parse_host_list(const std::string& text) {
  if (trim(text).empty()) throw UsageError("-H is empty: expected host[:slots],... such as 'node1:2,node2:2'");
  std::vector<Host> hosts;
  std::stringstream stream(text);
  std::string entry;
  while (std::getline(stream, entry, ',')) {
    const std::string origin = "-H entry '" + entry + "'";
    if (trim(entry).empty()) {
      throw UsageError("-H '" + text + "' has an empty entry: expected host[:slots],... such as 'node1:2,node2:2'");
    }
    Host host;
    host.origin = origin;
    const size_t colon = entry.find(':');
    host.name = entry.substr(0, colon);
    check_host_name(host.name, origin);
    if (colon != std::string::npos) host.slots = parse_slots(entry.substr(colon + 1), origin);
    hosts.push_back(host);
  }
  if (!text.empty() && text.back() == ',') {
    throw UsageError("-H '" + text + "' has an empty entry: expected host[:slots],... such as 'node1:2,node2:2'");
  }
  check_no_duplicates(hosts);
  return hosts;
}

std::vector<Host> parse_hostfile(const std::string& content, const std::string& source) {
  std::vector<Host> hosts;
  std::stringstream stream(content);
  std::string raw;
  int line_number = 0;
  while (std::getline(stream, raw)) {
    ++line_number;
    const std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    const std::string origin = source + " line " + std::to_string(line_number) + " '" + line + "'";
    std::stringstream words(line);
    Host host;
    host.origin = origin;
    words >> host.name;
    check_host_name(host.name, origin);
    std::string field;
    bool have_slots = false;
    while (words >> field) {
      const std::string key = "slots=";
      if (field.compare(0, key.size(), key) != 0 || have_slots) {
        throw UsageError(origin + ": unexpected '" + field + "': expected 'HOST slots=N'");
      }
      host.slots = parse_slots(field.substr(key.size()), origin);
      have_slots = true;
    }
    hosts.push_back(host);
  }
  if (hosts.empty()) throw UsageError(source + " lists no hosts: expected lines of the form 'HOST slots=N'");
  check_no_duplicates(hosts);
  return hosts;
}

std::vector<Host> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("--hostfile '" + path + "' cannot be read: expected a file of 'HOST slots=N' lines");
  std::stringstream content;
  content << in.rdbuf();
  return parse_hostfile(content.str(), "hostfile " + path);
}

void check_no_duplicates(const std::vector<Host>& hosts) {
  std::map<std::string, const Host*> seen;
  for (const Host& host : hosts) {
    const auto [it, inserted] = seen.emplace(host.name, &host);
    if (!inserted) {
      throw UsageError("host '" + host.name + "' is listed twice (" + it->second->origin + " and " +
                       host.origin + "): give each host once, with all its slots");
    }
  }
}

int total_slots(const std::vector<Host>& hosts) {
  long long total = 0;
  for (const Host& host : hosts) total += host.slots;
  return total > 1000000000 ? 1000000000 : static_cast<int>(total);
}

void check_enough_slots(const std::vector<Host>& hosts, int np) {
  const int slots = total_slots(hosts);
  if (slots < np) {
    throw UsageError("-np " + std::to_string(np) + " needs " + std::to_string(np) +
                     " slots but the hosts have only " + std::to_string(slots) + " (" +
                     format_host_list(hosts) + "): add hosts or slots, or lower -np");
  }
}

std::string format_host_list(const std::vector<Host>& hosts) {
  std::string out;
  for (const Host& host : hosts) {
    if (!out.empty()) out += ",";
    out += host.name + ":" + std::to_string(host.slots);
  }
  return out;
}

}  // namespace chorus::launcher
