#include "plan/slurm_environment.h"

#include "options/usage_error.h"

namespace chorus::launcher {
namespace {

// Hosts can be many, but a typo such as node[1-999999999] must not try to
// allocate them all.
constexpr size_t kMaxNodes = 1000000;

[[noreturn]] void bad_nodelist(const std::string& text, const std::string& why) {
  throw UsageError("SLURM_JOB_NODELIST='" + text + "' is invalid: " + why +
                   " (expected names such as 'node[01-04,07],gpu-a[1-2]')");
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string pad(long long value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// "01-04,07" -> {"01","02","03","04","07"}
std::vector<std::string> expand_ranges(const std::string& whole, const std::string& ranges) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= ranges.size()) {
    size_t comma = ranges.find(',', start);
    if (comma == std::string::npos) comma = ranges.size();
    const std::string item = ranges.substr(start, comma - start);
    const size_t dash = item.find('-');
    const std::string lo_text = item.substr(0, dash);
    const std::string hi_text = dash == std::string::npos ? lo_text : item.substr(dash + 1);
    if (!all_digits(lo_text) || !all_digits(hi_text) || lo_text.size() > 9 || hi_text.size() > 9) {
      bad_nodelist(whole, "'[" + ranges + "]' has '" + item + "', not a number or a range N-M");
    }
    const long long lo = std::stoll(lo_text), hi = std::stoll(hi_text);
    if (hi < lo) bad_nodelist(whole, "range '" + item + "' ends before it starts");
    if (static_cast<size_t>(hi - lo) + out.size() >= kMaxNodes) bad_nodelist(whole, "too many nodes");
    for (long long v = lo; v <= hi; ++v) out.push_back(pad(v, lo_text.size()));
    start = comma + 1;
  }
  return out;
}

// One host expression without top-level commas: "gpu-a[1-2]x[3,5]".
std::vector<std::string> expand_one(const std::string& whole, const std::string& expr) {
  std::vector<std::string> names{""};
  size_t pos = 0;
  while (pos < expr.size()) {
    const size_t open = expr.find('[', pos);
    const std::string literal = expr.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
    if (literal.find(']') != std::string::npos) bad_nodelist(whole, "a ']' has no matching '['");
    for (std::string& name : names) name += literal;
    if (open == std::string::npos) break;
    const size_t close = expr.find(']', open);
    if (close == std::string::npos) bad_nodelist(whole, "a '[' is not closed");
    const std::string ranges = expr.substr(open + 1, close - open - 1);
    if (ranges.find('[') != std::string::npos) bad_nodelist(whole, "brackets are nested");
    const std::vector<std::string> suffixes = expand_ranges(whole, ranges);
    if (names.size() * suffixes.size() > kMaxNodes) bad_nodelist(whole, "too many nodes");
    std::vector<std::string> next;
    for (const std::string& name : names) {
      for (const std::string& suffix : suffixes) next.push_back(name + suffix);
    }
    names.swap(next);
    pos = close + 1;
  }
  return names;
}

}  // namespace

std::vector<std::string> expand_slurm_nodelist(const std::string& text) {
  if (text.empty()) bad_nodelist(text, "it is empty");
  std::vector<std::string> nodes;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) bad_nodelist(text, "a ']' has no matching '['");
    if (c != ',' || depth != 0) continue;
    const std::string expr = text.substr(start, i - start);
    if (expr.empty()) bad_nodelist(text, "it has an empty entry");
    for (std::string& name : expand_one(text, expr)) {
      if (!is_valid_host_name(name)) bad_nodelist(text, "'" + name + "' is not a host name");
      nodes.push_back(std::move(name));
    }
    if (nodes.size() > kMaxNodes) bad_nodelist(text, "too many nodes");
    start = i + 1;
  }
  if (depth != 0) bad_nodelist(text, "a '[' is not closed");
  return nodes;
}

std::vector<int> parse_slurm_tasks_per_node(const std::string& text) {
  auto bad = [&](const std::string& item) {
    throw UsageError("SLURM_TASKS_PER_NODE='" + text + "' is invalid at '" + item +
                     "': expected entries N or N(xM) separated by commas, such as '2(x3),1'");
  };
  std::vector<int> tasks;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    std::string count_text = item;
    int repeat = 1;
    const size_t paren = item.find('(');
    if (paren != std::string::npos) {
      count_text = item.substr(0, paren);
      const std::string rest = item.substr(paren);
      if (rest.size() < 4 || rest.compare(0, 2, "(x") != 0 || rest.back() != ')' ||
          !parse_positive_int(rest.substr(2, rest.size() - 3), &repeat)) {
        bad(item);
      }
    }
    int count = 0;
    if (!parse_positive_int(count_text, &count)) bad(item);
    if (tasks.size() + static_cast<size_t>(repeat) > kMaxNodes) bad(item);
    tasks.insert(tasks.end(), static_cast<size_t>(repeat), count);
    start = comma + 1;
  }
  return tasks;
}

std::optional<SlurmAllocation> discover_slurm_allocation(const EnvLookup& env) {
  const char* job_id = env("SLURM_JOB_ID");
  if (job_id == nullptr) return std::nullopt;
  SlurmAllocation allocation;
  allocation.job_id = job_id;
  const char* nodelist = env("SLURM_JOB_NODELIST");
  if (nodelist == nullptr) nodelist = env("SLURM_NODELIST");
  if (nodelist == nullptr) {
    throw UsageError("SLURM_JOB_ID is set (" + allocation.job_id +
                     ") but SLURM_JOB_NODELIST is not: run chorusrun inside a complete Slurm allocation, or give -H");
  }
  const char* tasks_text = env("SLURM_TASKS_PER_NODE");
  if (tasks_text == nullptr) {
    throw UsageError("SLURM_JOB_ID is set (" + allocation.job_id +
                     ") but SLURM_TASKS_PER_NODE is not: run chorusrun inside a complete Slurm allocation, or give -H");
  }
  const std::vector<std::string> nodes = expand_slurm_nodelist(nodelist);
  const std::vector<int> tasks = parse_slurm_tasks_per_node(tasks_text);
  if (nodes.size() != tasks.size()) {
    throw UsageError("SLURM_JOB_NODELIST='" + std::string(nodelist) + "' has " + std::to_string(nodes.size()) +
                     " nodes but SLURM_TASKS_PER_NODE='" + tasks_text + "' gives tasks for " +
                     std::to_string(tasks.size()) + ": expected one task count per node");
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    allocation.hosts.push_back(Host{nodes[i], tasks[i], "Slurm node '" + nodes[i] + "'"});
  }
  check_no_duplicates(allocation.hosts);
  if (const char* ntasks = env("SLURM_NTASKS")) {
    int n = 0;
    if (!parse_positive_int(ntasks, &n)) {
      throw UsageError(std::string("SLURM_NTASKS='") + ntasks + "' is invalid: expected a positive integer");
    }
    allocation.ntasks = n;
  }
  return allocation;
}

}  // namespace chorus::launcher
