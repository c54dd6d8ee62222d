#include "chorus/tune/trial.h"

#include <chrono>
#include <cmath>
#include <exception>

#include "chorus/status.h"
#include "chorus/tune/json.h"
#include "json_fields.h"

namespace chorus {
namespace tune {
namespace {

namespace jf = json_fields;

}  // namespace

double unix_time_now() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count();
}

std::string encode_job(const Job& job) {
  Json j = Json::object();
  j["kind"] = job_kind_name(job.kind);
  j["trial"] = job.trial;
  j["rung"] = job.rung;
  j["budget"] = job.budget;
  j["previous_budget"] = job.previous_budget;
  j["bracket"] = job.bracket;
  return j.dump();
}

Job decode_job(const std::string& text) {
  const Json j = jf::parse(text);
  Job job;
  const std::string& kind = jf::string(jf::member(j, "kind"), "job kind");
  const JobKind kinds[] = {JobKind::kStart, JobKind::kPromote, JobKind::kWait, JobKind::kDone, JobKind::kRegroup};
  bool known = false;
  for (JobKind k : kinds)
    if (kind == job_kind_name(k)) job.kind = k, known = true;
  if (!known) throw Error(Status::InvalidArgument("unknown job kind '" + kind + "'"));
  job.trial = jf::integer(jf::member(j, "trial"), "job trial");
  job.rung = static_cast<int>(jf::integer(jf::member(j, "rung"), "job rung"));
  job.budget = jf::integer(jf::member(j, "budget"), "job budget");
  job.previous_budget = jf::integer(jf::member(j, "previous_budget"), "job previous_budget");
  job.bracket = static_cast<int>(jf::integer(jf::member(j, "bracket"), "job bracket"));
  return job;
}

std::string encode_report(const JobReport& r) {
  Json j = Json::object();
  j["group"] = r.group;
  j["trial"] = r.trial;
  j["rung"] = r.rung;
  j["failed"] = r.failed;
  j["metric"] = r.failed ? 0.0 : r.metric;
  j["error"] = r.error;
  j["set_failed"] = r.set_failed;
  j["resource_used"] = r.resource_used;
  j["start"] = r.start_time;
  j["end"] = r.end_time;
  return j.dump();
}

JobReport decode_report(const std::string& text) {
  const Json j = jf::parse(text);
  JobReport r;
  r.group = static_cast<int>(jf::integer(jf::member(j, "group"), "report group"));
  r.trial = jf::integer(jf::member(j, "trial"), "report trial");
  r.rung = static_cast<int>(jf::integer(jf::member(j, "rung"), "report rung"));
  r.failed = jf::boolean(jf::member(j, "failed"), "report failed");
  r.metric = jf::number(jf::member(j, "metric"), "report metric");
  r.error = jf::string(jf::member(j, "error"), "report error");
  r.set_failed = jf::boolean(jf::member(j, "set_failed"), "report set_failed");
  r.resource_used = jf::integer(jf::member(j, "resource_used"), "report resource_used");
  r.start_time = jf::number(jf::member(j, "start"), "report start");
  r.end_time = jf::number(jf::member(j, "end"), "report end");
  return r;
}

JobReport run_trial_job(const TrialFunction& fn, const TrialJob& job, int group, ProcessSet process_set,
                        const std::function<void(const std::string&)>& on_throw) {
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
  bool threw = false;
  try {
    const double metric = fn(ctx);
    if (std::isfinite(metric)) {
      report.metric = metric;
    } else {
      report.failed = true;
      report.error = std::isnan(metric) ? "the metric is NaN (the trial diverged)" : "the metric is infinite (the trial diverged)";
    }
  } catch (const std::exception& e) {
    report.failed = threw = true;
    report.error = std::string("the trial threw: ") + e.what();
  } catch (...) {
    report.failed = threw = true;
    report.error = "the trial threw an exception that is not a std::exception";
  }
  if (threw && on_throw) on_throw(report.error);
  report.resource_used = ctx.resource_used;
  report.end_time = unix_time_now();
  return report;
}

}  // namespace tune
}  // namespace chorus
