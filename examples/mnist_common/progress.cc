#include "progress.h"

#include <cmath>
#include <cstdio>

namespace train_mnist {
namespace {

constexpr std::chrono::milliseconds kRedrawInterval{100};

}  // namespace

std::string format_epoch_line(const EpochReport& report) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "epoch %lld/%lld  train loss %.4f  test loss %.4f  test accuracy %.4f  "
                "%.0f samples/s  %.2f s%s",
                static_cast<long long>(report.epoch), static_cast<long long>(report.epochs),
                report.train_loss, report.test_loss, report.test_accuracy,
                report.samples_per_second, report.seconds, report.best ? "  *best" : "");
  return line;
}

ProgressPrinter::ProgressPrinter(std::ostream& out, bool enabled, bool live)
    : out_(out), enabled_(enabled), live_(enabled && live) {}

void ProgressPrinter::start_epoch(int64_t epoch, int64_t epochs, int64_t samples_per_epoch) {
  epoch_ = epoch;
  epochs_ = epochs;
  samples_per_epoch_ = samples_per_epoch;
  epoch_start_ = std::chrono::steady_clock::now();
  last_draw_ = epoch_start_;
}

bool ProgressPrinter::wants_update(int64_t samples_done) const {
  return live_ && (std::chrono::steady_clock::now() - last_draw_ >= kRedrawInterval ||
                   samples_done >= samples_per_epoch_);
}

void ProgressPrinter::update(int64_t samples_done, double loss) {
  if (!wants_update(samples_done)) return;
  const auto now = std::chrono::steady_clock::now();
  last_draw_ = now;
  const double seconds = std::chrono::duration<double>(now - epoch_start_).count();
  char line[160];
  // A NaN loss is one this rank does not know (a pipeline stage before the
  // last): the line leaves it out rather than print "nan".
  char loss_text[32] = "";
  if (!std::isnan(loss)) std::snprintf(loss_text, sizeof(loss_text), "  loss %.4f", loss);
  const int width = std::snprintf(
      line, sizeof(line), "epoch %lld/%lld  %lld/%lld samples  %.0f samples/s%s",
      static_cast<long long>(epoch_), static_cast<long long>(epochs_),
      static_cast<long long>(samples_done), static_cast<long long>(samples_per_epoch_),
      seconds > 0 ? samples_done / seconds : 0.0, loss_text);
  clear_live_line();
  out_ << line << std::flush;
  live_width_ = width > 0 ? static_cast<size_t>(width) : 0;
}

void ProgressPrinter::finish_epoch(const EpochReport& report) {
  if (!enabled_) return;
  clear_live_line();
  out_ << format_epoch_line(report) << std::endl;
}

void ProgressPrinter::message(const std::string& line) {
  if (!enabled_) return;
  clear_live_line();
  out_ << line << std::endl;
}

void ProgressPrinter::clear_live_line() {
  if (live_width_ == 0) return;
  out_ << '\r' << std::string(live_width_, ' ') << '\r';
  live_width_ = 0;
}

}  // namespace train_mnist
