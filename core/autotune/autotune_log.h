// AutotuneLog: the CSV file rank 0 writes when CHORUS_AUTOTUNE_LOG is set,
// one row per measured sample and a last row for the setting that was kept.
// The columns between kind and bytes_per_second are the knobs', named and
// ordered as the runtime declares them (autotune_knob.h), so a new knob is a
// new column without a change here; with the standard knobs:
//
//   sample,kind,fusion_threshold_bytes,cycle_time_ms,algorithm,bytes_per_second,best
//   0,start,67108864,0,shm,1.234e+09,1
//   1,random,2965821,7.5,mpi,9.87e+08,0
//   ...
//   16,frozen,8388608,1,shm,1.301e+09,1
//
// kind is start, random, guided or remeasure (autotune_search.h) and frozen
// for the last row, whose score is the model's estimate for the kept
// setting; best is 1 when the sample's setting was the incumbent right
// after it was measured. Every row is flushed at once, so the file can be
// read while the job runs.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {

class AutotuneLog {
 public:
  AutotuneLog() = default;
  ~AutotuneLog() { close(); }
  AutotuneLog(const AutotuneLog&) = delete;
  AutotuneLog& operator=(const AutotuneLog&) = delete;

  // Creates (truncates) the file and writes the header with the knobs'
  // `columns` ("fusion_threshold_bytes", ...); an unwritable path is an
  // error naming it.
  Status open(const std::string& path, const std::vector<std::string>& columns);
  bool enabled() const { return file_ != nullptr; }
  // A failed write is reported once and closes the log (the job goes on).
  // `values`: one per column, as TuningSpace::format writes them.
  Status row(size_t sample, const char* kind, const std::vector<std::string>& values, double bytes_per_second,
             bool best);
  void close();

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace chorus
