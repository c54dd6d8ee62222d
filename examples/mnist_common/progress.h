// What rank 0 prints while training: a live line during each epoch (only
// when stdout is a terminal) and one line per finished epoch.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace train_mnist {

struct EpochReport {
  int64_t epoch = 0;  // 1-based
  int64_t epochs = 0;
  double train_loss = 0;
  double test_loss = 0;
  double test_accuracy = 0;
  double samples_per_second = 0;  // training samples of all ranks / training seconds
  double seconds = 0;             // the whole epoch: training, evaluation, checkpoint
  bool best = false;              // lowest test loss so far
};

// "epoch 2/5  train loss 0.2817  test loss 0.2402  test accuracy 0.9285  41234 samples/s  0.42 s"
// (with "  *best" appended when report.best).
std::string format_epoch_line(const EpochReport& report);

class ProgressPrinter {
 public:
  // enabled: this rank prints (rank 0). live: also the in-epoch line, which
  // rewrites itself with '\r' (for terminals only).
  ProgressPrinter(std::ostream& out, bool enabled, bool live);

  void start_epoch(int64_t epoch, int64_t epochs, int64_t samples_per_epoch);
  // samples_done: of all ranks so far this epoch; loss: the latest batch's.
  // Redraws at most every 100 ms so printing never slows training.
  void update(int64_t samples_done, double loss);
  // Whether update(samples_done, ...) would redraw now: a caller whose loss
  // costs something to read (a copy from a GPU) asks first.
  bool wants_update(int64_t samples_done) const;
  void finish_epoch(const EpochReport& report);
  void message(const std::string& line);

 private:
  void clear_live_line();

  std::ostream& out_;
  bool enabled_;
  bool live_;
  int64_t epoch_ = 0;
  int64_t epochs_ = 0;
  int64_t samples_per_epoch_ = 0;
  std::chrono::steady_clock::time_point epoch_start_;
  std::chrono::steady_clock::time_point last_draw_;
  size_t live_width_ = 0;
};

}  // namespace train_mnist
