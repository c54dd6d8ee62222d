#include "chorus/tune/trial.h"

#include <chrono>
#include <cmath>
#include <exception>

#include "chorus/status.h"
#include "chorus/tune/json.h"

namespace chorus {
namespace tune {

double unix_time_now() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count();
}

std::string encode_job(const Job& job) {
  Json j = Json::object();
  j.set("kind", job_kind_name(job.kind));
  j.set("trial", job.trial);
  j.set("rung", job.rung);
  j.set("budget", job.budget);
  j.set("previous_budget", job.previous_budget);
  j.set("bracket", job.bracket);
  return j.dump();
}

Job decode_job(const std::string& text) {
  const Json j = Json::parse(text);
  Job job;
  const std::string& kind = j.at("kind").as_string("job kind");
  const JobKind kinds[] = {JobKind::kStart, JobKind::kPromote, JobKind::kWait, JobKind::kDone};
  bool known = false;
  for (JobKind k : kinds)
    if (kind == job_kind_name(k)) job.kind = k, known = true;
  if (!known) throw Error(Status::InvalidArgument("unknown job kind '" + kind + "'"));
  job.trial = j.at("trial").as_int("job trial");
  job.rung = static_cast<int>(j.at("rung").as_int("job rung"));
  job.budget = j.at("budget").as_int("job budget");
  job.previous_budget = j.at("previous_budget").as_int("job previous_budget");
  job.bracket = static_cast<int>(j.at("bracket").as_int("job bracket"));
  return job;
}

std::string encode_report(const JobReport& r) {
  Json j = Json::object();
  j.set("group", r.group);
  j.set("trial", r.trial);
  j.set("rung", r.rung);
  j.set("failed", r.failed);
  j.set("metric", r.failed ? 0.0 : r.metric);
  j.set("error", r.error);
  j.set("resource_used", r.resource_used);
  j.set("start", r.start_time);
  j.set("end", r.end_time);
  return j.dump();
}

JobReport decode_report(const std::string& text) {
  const Json j = Json::parse(text);
  JobReport r;
  r.group = static_cast<int>(j.at("group").as_int("report group"));
  r.trial = j.at("trial").as_int("report trial");
  r.rung = static_cast<int>(j.at("rung").as_int("report rung"));
  r.failed = j.at("failed").as_bool("report failed");
  r.metric = j.at("metric").as_number("report metric");
  r.error = j.at("error").as_string("report error");
  r.resource_used = j.at("resource_used").as_int("report resource_used");
  r.start_time = j.at("start").as_number("report start");
  r.end_time = j.at("end").as_number("report end");
  return r;
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
