#include "chorus/tune/trial.h"

#include <chrono>
#include <cmath>
#include <exception>

namespace chorus {
namespace tune {

double unix_time_now() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count();
}

JobReport run_trial_job(const TrialFunction& fn, const TrialJob& job, int group, ProcessSet process_set) {
  JobReport report;
  report.group = group;
  report.trial = job.job.trial;
  report.rung = job.job.rung;
  TrialContext ctx;
  ctx.trial = job.job.trial;
  ctx.rung = job.job.rung;
  ctx.budget = job.job.budget;
  ctx.previous_budget = job.job.previous_budget;
  ctx.config = &job.config;
  ctx.group = group;
  ctx.process_set = process_set;
  ctx.resource_used = job.job.budget - job.job.previous_budget;
  report.start_time = unix_time_now();
  try {
    const double metric = fn(ctx);
    if (std::isfinite(metric)) {
      report.metric = metric;
    } else {
      report.failed = true;
      report.error = std::isnan(metric) ? "the metric is NaN (the trial diverged)" : "the metric is infinite (the trial diverged)";
    }
  } catch (const std::exception& e) {
    report.failed = true;
    report.error = std::string("the trial threw: ") + e.what();
  } catch (...) {
    report.failed = true;
    report.error = "the trial threw an exception that is not a std::exception";
  }
  report.resource_used = ctx.resource_used;
  report.end_time = unix_time_now();
  return report;
}

}  // namespace tune
}  // namespace chorus
