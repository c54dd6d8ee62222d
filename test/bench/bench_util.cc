#include "bench_util.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>

extern char** environ;

namespace chorus_bench {

Stats summarize(std::vector<double> samples) {
  Stats s;
  s.samples = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.median = n % 2 == 1 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.min = samples.front();
  return s;
}

bool parse_size(const std::string& text, size_t* bytes) {
  size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos == 0 || pos > 15) return false;
  const unsigned long long number = std::strtoull(text.substr(0, pos).c_str(), nullptr, 10);
  std::string unit = text.substr(pos);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  unsigned long long scale = 0;
  if (unit.empty() || unit == "b") {
    scale = 1;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    scale = 1ULL << 10;
  } else if (unit == "m" || unit == "mb" || unit == "mib") {
    scale = 1ULL << 20;
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    scale = 1ULL << 30;
  } else {
    return false;
  }
  if (number > (1ULL << 40) / scale) return false;  // keeps the product sane
  *bytes = static_cast<size_t>(number * scale);
  return true;
}

std::string format_size(size_t bytes) {
  char buf[64];
  if (bytes >= (1u << 30) && bytes % (1u << 30) == 0) {
    std::snprintf(buf, sizeof buf, "%zu GiB", bytes >> 30);
  } else if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) {
    std::snprintf(buf, sizeof buf, "%zu MiB", bytes >> 20);
  } else if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) {
    std::snprintf(buf, sizeof buf, "%zu KiB", bytes >> 10);
  } else {
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  }
  return buf;
}

std::string format_time(double seconds) {
  char buf[64];
  if (seconds < 1e-6) {
    std::snprintf(buf, sizeof buf, "%.0f ns", seconds * 1e9);
  } else if (seconds < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.2f us", seconds * 1e6);
  } else if (seconds < 1.0) {
    std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  }
  return buf;
}

std::string format_bandwidth(double bytes_per_second) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GB/s", bytes_per_second / 1e9);
  return buf;
}

double algbw(size_t bytes, double seconds) {
  return seconds > 0.0 ? static_cast<double>(bytes) / seconds : 0.0;
}

double busbw(size_t bytes, double seconds, int ranks) {
  if (ranks < 1) return 0.0;
  return algbw(bytes, seconds) * 2.0 * (ranks - 1) / ranks;
}

double ratio(double mpi_seconds, double chorus_seconds) {
  return chorus_seconds > 0.0 ? mpi_seconds / chorus_seconds : 0.0;
}

std::string local_date_time() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %z", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string load_average() {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) != 3) return "unknown";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %.2f %.2f", load[0], load[1], load[2]);
  return buf;
}

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

std::vector<std::string> chorus_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    if (entry.rfind("CHORUS_", 0) == 0) out.push_back(entry);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace chorus_bench
