#include "autotune/autotune_log.h"

#include <cerrno>
#include <cstring>

namespace chorus {

Status AutotuneLog::open(const std::string& path, const std::vector<std::string>& columns) {
  close();
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return Status::InvalidArgument("CHORUS_AUTOTUNE_LOG: cannot open '" + path + "' for writing: " +
                                   std::strerror(errno));
  }
  file_ = file;
  path_ = path;
  std::string header = "sample,kind";
  for (const std::string& column : columns) header += "," + column;
  header += ",bytes_per_second,best\n";
  if (std::fputs(header.c_str(), file_) < 0 ||
      std::fflush(file_) != 0) {
    const std::string reason = std::strerror(errno);
    close();
    return Status::InvalidArgument("CHORUS_AUTOTUNE_LOG: cannot write to '" + path + "': " + reason);
  }
  return Status::OK();
}

Status AutotuneLog::row(size_t sample, const char* kind, const std::vector<std::string>& values,
                        double bytes_per_second, bool best) {
  if (file_ == nullptr) return Status::OK();
  std::string settings;
  for (const std::string& value : values) settings += value + ",";
  // %.6e: scores are measurements.
  const int written = std::fprintf(file_, "%zu,%s,%s%.6e,%d\n", sample, kind, settings.c_str(), bytes_per_second,
                                   best ? 1 : 0);
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
