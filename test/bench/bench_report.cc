#include "bench_report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace chorus_bench {
namespace {

// "12.3 us (min 10.1 us)"
std::string median_min(const Stats& s) {
  return format_time(s.median) + " (" + format_time(s.min) + ")";
}

std::string times_ratio(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, value >= 1.0 ? "%.2fx" : "%.3gx", value);
  return buf;
}

}  // namespace

Json stats_json(const Stats& s) {
  return Json{{"median_s", s.median}, {"min_s", s.min}, {"samples", s.samples}};
}

Json run_json(const char* benchmark, const RunInfo& info) {
  return Json{{"benchmark", benchmark},
              {"np", info.ranks},
              {"date", info.date},
              {"host", info.host},
              {"load_average", info.load_average},
              {"glibc_tunables", info.glibc_tunables},
              {"mpi_library", info.mpi_library}};
}

bool write_json_file(const Json& json, const std::string& path, std::string* error) {
  std::ofstream file(path);
  // Host names and MPI's version string are not ours: invalid UTF-8 in them
  // becomes U+FFFD instead of an exception.
  if (file) file << json.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
  if (!file) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

void print_header(const RunInfo& info, const Options& options) {
  std::printf("# chorus_bench  np=%d  date=%s  host=%s  load average=%s\n", info.ranks,
              info.date.c_str(), info.host.c_str(), info.load_average.c_str());
  std::printf("# GLIBC_TUNABLES=%s (both sides run with the same allocator settings)\n",
              info.glibc_tunables.c_str());
  std::printf("# MPI: %s\n", info.mpi_library.c_str());
  std::string env;
  for (const std::string& e : info.chorus_env) env += " " + e;
  std::printf("# Chorus settings:%s\n", env.empty() ? " defaults (no CHORUS_* set)" : env.c_str());
  std::printf("# %d timed rounds after %d warm-up rounds (latency: %d rounds); each round starts\n"
              "# with a barrier and counts as long as its slowest rank. Times: median (min).\n"
              "# ratio = MPI time / Chorus time (above 1: Chorus is faster).\n",
              options.repeats, options.warmup, options.latency_repeats);
}

void print_allreduce(const std::vector<AllreduceRow>& rows, int ranks) {
  std::printf("\nallreduce float32 sum, in place, same buffers, alternating Chorus, MPI_Allreduce and memcpy;\n"
              "each starts from its buffer just written by its rank (as a gradient after backward)\n");
  std::printf("busbw = bytes/time x 2(n-1)/n; memcpy = rank 0 alone copies the same bytes (one core);\n"
              "of memcpy = chorus busbw / memcpy bandwidth; warm memcpy = the copy again, from the source\n"
              "it has just read\n");
  std::printf("%9s  %22s  %22s  %13s  %13s  %7s  %13s  %9s  %13s\n", "size", "chorus time", "mpi time",
              "chorus busbw", "mpi busbw", "ratio", "memcpy", "of memcpy", "warm memcpy");
  for (const AllreduceRow& row : rows) {
    const double chorus_busbw = busbw(row.bytes, row.chorus.median, ranks);
    const double copy_bandwidth = algbw(row.bytes, row.memcpy.median);
    std::printf("%9s  %22s  %22s  %13s  %13s  %7s  %13s  %9s  %13s\n", format_size(row.bytes).c_str(),
                median_min(row.chorus).c_str(), median_min(row.mpi).c_str(),
                format_bandwidth(chorus_busbw).c_str(),
                format_bandwidth(busbw(row.bytes, row.mpi.median, ranks)).c_str(),
                times_ratio(ratio(row.mpi.median, row.chorus.median)).c_str(),
                format_bandwidth(copy_bandwidth).c_str(), times_ratio(ratio(chorus_busbw, copy_bandwidth)).c_str(),
                format_bandwidth(algbw(row.bytes, row.memcpy_warm.median)).c_str());
  }
  std::fflush(stdout);
}

void print_process_set(const std::vector<ProcessSetRow>& rows, int ranks, const std::vector<int>& members) {
  std::string list;
  for (int r : members) list += (list.empty() ? "" : ",") + std::to_string(r);
  const int n = static_cast<int>(members.size());
  std::printf("\nallreduce float32 sum on process set [%s] (%d ranks) beside the world (%d ranks), same sizes,\n"
              "alternating; busbw = bytes/time x 2(n-1)/n with each one's own n\n", list.c_str(), n, ranks);
  std::printf("%9s  %22s  %22s  %13s  %13s  %9s\n", "size", "world time", "set time", "world busbw",
              "set busbw", "set/world");
  for (const ProcessSetRow& row : rows) {
    const double world = busbw(row.bytes, row.world.median, ranks);
    const double set = busbw(row.bytes, row.set.median, n);
    std::printf("%9s  %22s  %22s  %13s  %13s  %9s\n", format_size(row.bytes).c_str(), median_min(row.world).c_str(),
                median_min(row.set).c_str(), format_bandwidth(world).c_str(), format_bandwidth(set).c_str(),
                times_ratio(ratio(set, world)).c_str());
  }
  std::fflush(stdout);
}

void print_small_step(const SmallStepResult& small) {
  std::printf("\n%d tensors of %s per step, float32 sum\n", small.tensors,
              format_size(small.bytes_each).c_str());
  std::printf("  %-58s %22s\n", "chorus: all allreduce_async, then all wait",
              median_min(small.chorus).c_str());
  std::printf("  %-58s %22s  ratio %s\n", "mpi: one MPI_Allreduce per tensor",
              median_min(small.mpi_separate).c_str(),
              times_ratio(ratio(small.mpi_separate.median, small.chorus.median)).c_str());
  std::printf("  %-58s %22s  ratio %s\n", "mpi: one MPI_Allreduce of all, incl. pack+unpack copies",
              median_min(small.mpi_fused).c_str(),
              times_ratio(ratio(small.mpi_fused.median, small.chorus.median)).c_str());
  std::fflush(stdout);
}

void print_latency(const LatencyResult& latency) {
  std::printf("\nlatency of one %s allreduce, submit to wait\n", format_size(latency.bytes).c_str());
  std::printf("  chorus %s   mpi %s   ratio %s\n", median_min(latency.chorus).c_str(),
              median_min(latency.mpi).c_str(),
              times_ratio(ratio(latency.mpi.median, latency.chorus.median)).c_str());
  std::fflush(stdout);
}

void print_idle(const IdleResult& idle) {
  if (!idle.measured) {
    std::printf("\nidle CPU: not measured (--idle-seconds 0)\n");
    return;
  }
  auto per_rank = [](const std::vector<double>& values, const char* format) {
    std::string out;
    for (double v : values) {
      char buf[32];
      if (v < 0.0) {
        std::snprintf(buf, sizeof buf, " unknown");
      } else {
        std::snprintf(buf, sizeof buf, format, v);
      }
      out += buf;
    }
    return out;
  };
  std::printf("\nidle CPU over %.1f s, nothing queued, main thread asleep, %% of one core:\n", idle.seconds);
  if (idle.background_max_percent < 0.0) {
    std::printf("  background thread: unknown (no readable thread named chorus-bg)\n");
  } else {
    std::printf("  background thread: max %.2f%% (per rank:%s), ran max %.0f times (per rank:%s)\n",
                idle.background_max_percent, per_rank(idle.background_percent_per_rank, " %.2f%%").c_str(),
                idle.background_max_wakeups, per_rank(idle.background_wakeups_per_rank, " %.0f").c_str());
  }
  if (idle.heartbeat_max_percent < 0.0) {
    std::printf("  heartbeat thread:  none (CHORUS_HEARTBEAT_TIMEOUT_SECONDS=0, or no thread named chorus-hb)\n");
  } else {
    std::printf("  heartbeat thread:  max %.2f%% (per rank:%s), ran max %.0f times (per rank:%s)\n",
                idle.heartbeat_max_percent, per_rank(idle.heartbeat_percent_per_rank, " %.3f%%").c_str(),
                idle.heartbeat_max_wakeups, per_rank(idle.heartbeat_wakeups_per_rank, " %.0f").c_str());
  }
  std::printf("  whole process:     max %.2f%% (per rank:%s)\n", idle.max_percent,
              per_rank(idle.percent_per_rank, " %.2f%%").c_str());
  std::fflush(stdout);
}

bool write_json(const Results& r, const std::string& path, std::string* error) {
  const int n = r.info.ranks;
  Json json = run_json("chorus_bench", r.info);
  json["chorus_env"] = r.info.chorus_env;
  json["repeats"] = r.options.repeats;
  json["warmup"] = r.options.warmup;
  json["latency_repeats"] = r.options.latency_repeats;
  // Ratios of a zero time are infinite: JSON has no infinity, nlohmann writes null.
  Json& allreduce = json["allreduce"] = Json::array();
  for (const AllreduceRow& row : r.allreduce) {
    allreduce.push_back(Json{
        {"bytes", row.bytes},
        {"chorus", stats_json(row.chorus)},
        {"mpi", stats_json(row.mpi)},
        {"chorus_algbw_Bps", algbw(row.bytes, row.chorus.median)},
        {"mpi_algbw_Bps", algbw(row.bytes, row.mpi.median)},
        {"chorus_busbw_Bps", busbw(row.bytes, row.chorus.median, n)},
        {"mpi_busbw_Bps", busbw(row.bytes, row.mpi.median, n)},
        {"ratio", ratio(row.mpi.median, row.chorus.median)},
        {"memcpy", stats_json(row.memcpy)},
        {"memcpy_Bps", algbw(row.bytes, row.memcpy.median)},
        {"memcpy_warm", stats_json(row.memcpy_warm)},
        {"memcpy_warm_Bps", algbw(row.bytes, row.memcpy_warm.median)},
        {"chorus_busbw_of_memcpy",
         ratio(busbw(row.bytes, row.chorus.median, n), algbw(row.bytes, row.memcpy.median))}});
  }
  if (!r.process_set_ranks.empty()) {
    const int m = static_cast<int>(r.process_set_ranks.size());
    Json rows = Json::array();
    for (const ProcessSetRow& row : r.process_set) {
      rows.push_back(Json{{"bytes", row.bytes},
                          {"world", stats_json(row.world)},
                          {"set", stats_json(row.set)},
                          {"world_busbw_Bps", busbw(row.bytes, row.world.median, n)},
                          {"set_busbw_Bps", busbw(row.bytes, row.set.median, m)}});
    }
    json["process_set"] = Json{{"ranks", r.process_set_ranks}, {"allreduce", std::move(rows)}};
  }
  const SmallStepResult& s = r.small;
  json["small_tensors"] = Json{{"tensors", s.tensors},
                               {"bytes_each", s.bytes_each},
                               {"chorus", stats_json(s.chorus)},
                               {"mpi_separate", stats_json(s.mpi_separate)},
                               {"mpi_fused_with_copies", stats_json(s.mpi_fused)},
                               {"ratio_separate", ratio(s.mpi_separate.median, s.chorus.median)},
                               {"ratio_fused", ratio(s.mpi_fused.median, s.chorus.median)}};
  const LatencyResult& l = r.latency;
  json["latency"] = Json{{"bytes", l.bytes},
                         {"chorus", stats_json(l.chorus)},
                         {"mpi", stats_json(l.mpi)},
                         {"ratio", ratio(l.mpi.median, l.chorus.median)}};
  if (!r.idle.measured) {
    json["idle_cpu"] = nullptr;
  } else {
    // Unknown figures (-1) are written as null.
    auto number = [](double v) { return v < 0.0 ? Json(nullptr) : Json(v); };
    auto list = [&](const std::vector<double>& values) {
      Json out = Json::array();
      for (double v : values) out.push_back(number(v));
      return out;
    };
    json["idle_cpu"] = Json{
        {"seconds", r.idle.seconds},
        {"percent_per_rank", list(r.idle.percent_per_rank)},
        {"max_percent", r.idle.max_percent},
        {"background_thread", Json{{"percent_per_rank", list(r.idle.background_percent_per_rank)},
                                   {"max_percent", number(r.idle.background_max_percent)},
                                   {"wakeups_per_rank", list(r.idle.background_wakeups_per_rank)},
                                   {"max_wakeups", number(r.idle.background_max_wakeups)}}},
        {"heartbeat_thread", Json{{"percent_per_rank", list(r.idle.heartbeat_percent_per_rank)},
                                  {"max_percent", number(r.idle.heartbeat_max_percent)},
                                  {"wakeups_per_rank", list(r.idle.heartbeat_wakeups_per_rank)},
                                  {"max_wakeups", number(r.idle.heartbeat_max_wakeups)}}}};
  }
  return write_json_file(json, path, error);
}

}  // namespace chorus_bench
