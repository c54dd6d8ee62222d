#include "ops/shm/shm_probe_choice.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace chorus {
namespace {

constexpr int64_t kSlotReuseBytes = int64_t{1} << 20;  // sizes where the store mode matters
constexpr double kStreamingMargin = 0.05;
// One stage only where it beats the chunked path clearly: at np=2 on the
// 2-core AMD VM the two were within ~10% up to 8 KiB, and one noisy probe
// must not fix a choice that later jobs read from the cache.
constexpr double kOneStageMargin = 0.10;

std::string size_text(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20) && bytes % (int64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

}  // namespace

ShmProbeChoice choose_allreduce_paths(const std::vector<ShmProbeSample>& samples) {
  ShmProbeChoice choice;
  choice.samples = samples;
  double plain = 0.0;
  double streaming = 0.0;
  for (const ShmProbeSample& s : samples) {
    if (s.bytes < kSlotReuseBytes) continue;
    plain += s.shm_plain_us;
    streaming += s.shm_streaming_us;
  }
  // Plain stores unless streaming wins clearly: memcpy is never far off,
  // and one noisy round must not flip the mode (it did without a margin).
  choice.streaming_stores = streaming < plain * (1.0 - kStreamingMargin);
  for (size_t i = 0; i < samples.size(); ++i) {
    const ShmProbeSample& s = samples[i];
    if (s.shm_one_stage_us <= 0.0 || s.shm_one_stage_us >= choice.chunked_us(s) * (1.0 - kOneStageMargin)) break;
    const bool next_timed = i + 1 < samples.size() && samples[i + 1].shm_one_stage_us > 0.0;
    choice.one_stage_bytes =
        next_timed ? static_cast<int64_t>(std::sqrt(static_cast<double>(s.bytes) * static_cast<double>(samples[i + 1].bytes)))
                   : s.bytes;
  }
  auto add = [&](int64_t from, bool shm) {
    if (!choice.ranges.empty() && choice.ranges.back().shm == shm) return;
    choice.ranges.push_back({from, shm});
  };
  add(0, false);
  for (size_t i = 0; i < samples.size(); ++i) {
    const ShmProbeSample& s = samples[i];
    const int64_t from = i == 0 ? s.bytes / 2
                                : static_cast<int64_t>(std::sqrt(static_cast<double>(samples[i - 1].bytes) *
                                                                 static_cast<double>(s.bytes)));
    add(from, choice.shm_us(s) < s.mpi_us);
  }
  return choice;
}

std::string ShmProbeChoice::describe() const {
  std::ostringstream out;
  out << (streaming_stores ? "streaming" : "plain") << " stores; one stage "
      << (one_stage_bytes > 0 ? "up to " + size_text(one_stage_bytes) : std::string("never")) << "; ";
  for (size_t i = 0; i < ranges.size(); ++i) {
    out << (i == 0 ? "" : ", ") << (ranges[i].shm ? "shm" : "mpi") << " from " << size_text(ranges[i].from_bytes);
  }
  out << " (MPI time / shm time:";
  for (const ShmProbeSample& s : samples) {
    char ratio[32];
    std::snprintf(ratio, sizeof(ratio), "%.2f", s.mpi_us / shm_us(s));
    out << ' ' << size_text(s.bytes) << ' ' << ratio << 'x';
  }
  out << ')';
  return out.str();
}

std::string ShmProbeChoice::serialize() const {
  std::ostringstream out;
  out.precision(17);
  for (const ShmProbeSample& s : samples) {
    out << "sample " << s.bytes << ' ' << s.mpi_us << ' ' << s.shm_plain_us << ' ' << s.shm_streaming_us << ' '
        << s.shm_one_stage_us << '\n';
  }
  return out.str();
}

bool ShmProbeChoice::parse(const std::string& text, ShmProbeChoice* out) {
  // The decision is recomputed from the timings, so a cache never holds a
  // choice that the current rule would not make.
  std::istringstream in(text);
  std::vector<ShmProbeSample> samples;
  for (std::string word; in >> word;) {
    ShmProbeSample s;
    if (word != "sample" ||
        !(in >> s.bytes >> s.mpi_us >> s.shm_plain_us >> s.shm_streaming_us >> s.shm_one_stage_us)) {
      return false;
    }
    const bool finite = std::isfinite(s.mpi_us) && std::isfinite(s.shm_plain_us) &&
                        std::isfinite(s.shm_streaming_us) && std::isfinite(s.shm_one_stage_us);
    if (s.bytes <= 0 || !finite || s.mpi_us <= 0 || s.shm_plain_us <= 0 || s.shm_streaming_us <= 0 ||
        s.shm_one_stage_us < 0) {
      return false;
    }
    if (!samples.empty() && s.bytes <= samples.back().bytes) return false;
    samples.push_back(s);
  }
  if (samples.empty()) return false;
  *out = choose_allreduce_paths(samples);
  return true;
}

}  // namespace chorus
