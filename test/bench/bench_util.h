// Small helpers shared by chorus_bench's files: statistics over timed
// samples, size parsing and formatting, and facts about the machine.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace chorus_bench {

// Median and minimum of a set of samples (seconds).
struct Stats {
  double median = 0.0;
  double min = 0.0;
  int samples = 0;
};
Stats summarize(std::vector<double> samples);

// "4096", "4K", "4KiB", "64k", "1M", "16MiB", "1G" -> bytes (K/M/G are powers
// of 1024, with or without "iB"/"B"). Returns false if `text` is not one.
bool parse_size(const std::string& text, size_t* bytes);
// 4096 -> "4 KiB", 1048576 -> "1 MiB", 1000 -> "1000 B".
std::string format_size(size_t bytes);
// 2.5e-6 -> "2.50 us"; picks ns, us, ms or s.
std::string format_time(double seconds);
// bytes per second -> "5.41 GB/s" (10^9 bytes).
std::string format_bandwidth(double bytes_per_second);

// Algorithm bandwidth: bytes / time (0 when time is 0).
double algbw(size_t bytes, double seconds);
// Bus bandwidth of an allreduce: algbw x 2(n-1)/n (0 when n == 1).
double busbw(size_t bytes, double seconds, int ranks);
// Throughput ratio of Chorus to MPI: mpi_seconds / chorus_seconds.
double ratio(double mpi_seconds, double chorus_seconds);

// Facts for the report header.
std::string local_date_time();   // "2024-05-01 12:00:00 +0000"
std::string host_name();
std::string load_average();      // "0.52 0.40 0.33"
std::string env_or(const char* name, const char* fallback);
// "NAME=value" for every CHORUS_* variable in the environment, sorted.
std::vector<std::string> chorus_environment();

}  // namespace chorus_bench
