#include "autotune/autotune_log.h"

#include <cerrno>
#include <cstring>

namespace chorus {

Status AutotuneLog::open(const std::string& path) {
  close();
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return Status::InvalidArgument("CHORUS_AUTOTUNE_LOG: cannot open '" + path + "' for writing: " +
                                   std::strerror(errno));
  }
  file_ = file;
  path_ = path;
  if (std::fputs("sample,kind,fusion_threshold_bytes,cycle_time_ms,algorithm,bytes_per_second,best\n", file_) < 0 ||
      std::fflush(file_) != 0) {
    const std::string reason = std::strerror(errno);
    close();
    return Status::InvalidArgument("CHORUS_AUTOTUNE_LOG: cannot write to '" + path + "': " + reason);
  }
  return Status::OK();
}

Status AutotuneLog::row(size_t sample, const char* kind, const TuningSettings& settings, const std::string& algorithm,
                        double bytes_per_second, bool best) {
  if (file_ == nullptr) return Status::OK();
  // %.10g: cycle times as set (2.3, not 2.2999999999999998); %.6e: scores are measurements.
  const int written = std::fprintf(file_, "%zu,%s,%lld,%.10g,%s,%.6e,%d\n", sample, kind,
                                   static_cast<long long>(settings.fusion_threshold_bytes), settings.cycle_time_ms,
                                   algorithm.c_str(), bytes_per_second, best ? 1 : 0);
  if (written < 0 || std::fflush(file_) != 0) {
    const std::string reason = std::strerror(errno);
    close();
    return Status::Internal("CHORUS_AUTOTUNE_LOG: writing to '" + path_ + "' failed (" + reason +
                            "); no further rows are written");
  }
  return Status::OK();
}

void AutotuneLog::close() {
  if (file_ == nullptr) return;
  std::fclose(file_);
  file_ = nullptr;
}

}  // namespace chorus
