#include "chorus/tune/search_log.h"

#include <cmath>
#include <cstdlib>

#include "chorus/status.h"
#include "json_fields.h"

namespace chorus {
namespace tune {
namespace {

namespace jf = json_fields;

[[noreturn]] void invalid(const std::string& message) { throw Error(Status::InvalidArgument(message)); }
[[noreturn]] void internal(const std::string& message) { throw Error(Status::Internal(message)); }

const char* const kStateNames[] = {"running", "paused", "completed", "failed", "stopped"};

TrialState parse_state(const std::string& name) {
  for (int i = 0; i < 5; ++i)
    if (name == kStateNames[i]) return static_cast<TrialState>(i);
  invalid("unknown trial state '" + name + "' (expected running, paused, completed, failed or stopped)");
}

Objective parse_objective(const std::string& name) {
  if (name == "maximize") return Objective::kMaximize;
  if (name == "minimize") return Objective::kMinimize;
  invalid("unknown objective '" + name + "' (expected maximize or minimize)");
}

ParamValue value_from_json(const Json& j, const std::string& what) {
  if (j.is_string()) return ParamValue(jf::string(j, what));
  if (j.is_number_integer()) return ParamValue(jf::integer(j, what));
  const double d = jf::number(j, what);
  // The space decides the type; check() compares with the sampled config.
  // Whole doubles read as integers, as files of earlier versions (which
  // wrote 2.0 as 2) always did.
  if (d == std::floor(d) && std::fabs(d) < 9007199254740992.0) return ParamValue(static_cast<int64_t>(d));
  return ParamValue(d);
}

}  // namespace

const char* trial_state_name(TrialState state) { return kStateNames[static_cast<int>(state)]; }

int64_t TrialRecord::budget_used() const {
  int64_t total = 0;
  for (const RungRecord& r : rungs) total += r.resource_used;
  return total;
}

const RungRecord* TrialRecord::last_result() const {
  for (auto it = rungs.rbegin(); it != rungs.rend(); ++it)
    if (it->finished && !it->failed) return &*it;
  return nullptr;
}

Json SearchHeader::to_json() const {
  Json j = Json::object();
  j["scheduler"] = scheduler;
  j["settings"] = settings;
  j["objective"] = objective_name(objective);
  j["seed"] = std::to_string(seed);  // a string: 64-bit seeds exceed a double's 53 bits
  j["max_budget"] = max_budget;
  j["groups"] = groups;
  j["space"] = space;
  return j;
}

SearchHeader SearchHeader::from_json(const Json& j) {
  SearchHeader h;
  h.scheduler = jf::string(jf::member(j, "scheduler"), "search.scheduler");
  h.settings = jf::member(j, "settings");
  h.objective = parse_objective(jf::string(jf::member(j, "objective"), "search.objective"));
  const std::string& seed = jf::string(jf::member(j, "seed"), "search.seed");
  char* end = nullptr;
  h.seed = std::strtoull(seed.c_str(), &end, 10);
  if (seed.empty() || *end != '\0') invalid("search.seed must be a decimal number, not '" + seed + "'");
  h.max_budget = jf::integer(jf::member(j, "max_budget"), "search.max_budget");
  h.groups = static_cast<int>(jf::integer(jf::member(j, "groups"), "search.groups"));
  h.space = jf::member(j, "space");
  return h;
}

std::string SearchHeader::difference(const SearchHeader& o) const {
  if (scheduler != o.scheduler) return "its scheduler is '" + scheduler + "', this search's is '" + o.scheduler + "'";
  if (settings != o.settings)
    return "its scheduler settings are " + settings.dump() + ", this search's are " + o.settings.dump();
  if (seed != o.seed) return "its seed is " + std::to_string(seed) + ", this search's is " + std::to_string(o.seed);
  if (objective != o.objective)
    return std::string("its objective is to ") + objective_name(objective) + ", this search's to " +
           objective_name(o.objective);
  if (space != o.space) return "its search space is " + space.dump() + ", this search's is " + o.space.dump();
  return "";
}

const TrialRecord* SearchLog::trial(int64_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= trials_.size()) return nullptr;
  return &trials_[static_cast<size_t>(id)];
}

TrialRecord& SearchLog::record_of(int64_t trial) {
  if (trial < 0 || static_cast<size_t>(trial) >= trials_.size())
    internal("the search log has no trial " + std::to_string(trial));
  return trials_[static_cast<size_t>(trial)];
}

RungRecord& SearchLog::rung_of(int64_t trial, int rung) {
  for (RungRecord& r : record_of(trial).rungs)
    if (r.rung == rung) return r;
  internal("the search log has no job of trial " + std::to_string(trial) + " at rung " + std::to_string(rung));
}

void SearchLog::job_started(const Job& job, const Config& config, int group, double time, bool rerun) {
  if (rerun) {
    RungRecord& r = rung_of(job.trial, job.rung);
    if (r.finished) internal("trial " + std::to_string(job.trial) + " rung " + std::to_string(job.rung) + " re-run after it finished");
    r.group = group;
    r.start_time = time;
    ++r.attempts;
    record_of(job.trial).state = TrialState::kRunning;
    return;
  }
  if (job.kind == JobKind::kStart) {
    if (job.trial != static_cast<int64_t>(trials_.size()))
      internal("a scheduler started trial " + std::to_string(job.trial) + " where trial " +
               std::to_string(trials_.size()) + " was next");
    TrialRecord t;
    t.id = job.trial;
    t.bracket = job.bracket;
    t.config = config;
    trials_.push_back(std::move(t));
  } else if (job.kind != JobKind::kPromote) {
    internal(std::string("job_started with a '") + job_kind_name(job.kind) + "' answer");
  }
  TrialRecord& t = record_of(job.trial);
  RungRecord r;
  r.rung = job.rung;
  r.budget = job.budget;
  r.previous_budget = job.previous_budget;
  r.group = group;
  r.start_time = time;
  t.rungs.push_back(r);
  t.state = TrialState::kRunning;
  events_.push_back({Event::kJob, job.trial, job.rung, 0});
}

void SearchLog::job_finished(int64_t trial, int rung, double metric, int64_t resource_used, double time) {
  RungRecord& r = rung_of(trial, rung);
  r.finished = true;
  r.metric = metric;
  r.resource_used = resource_used;
  r.end_time = time;
  record_of(trial).state = r.budget >= header_.max_budget ? TrialState::kCompleted : TrialState::kPaused;
  events_.push_back({Event::kResult, trial, rung, metric});
}

void SearchLog::job_failed(int64_t trial, int rung, const std::string& error, int64_t resource_used, double time) {
  RungRecord& r = rung_of(trial, rung);
  r.finished = true;
  r.failed = true;
  r.error = error;
  r.resource_used = resource_used;
  r.end_time = time;
  record_of(trial).state = TrialState::kFailed;
  events_.push_back({Event::kFailure, trial, rung, 0});
}

void SearchLog::finish() {
  for (TrialRecord& t : trials_)
    if (t.state == TrialState::kPaused) t.state = TrialState::kStopped;
}

std::vector<Job> SearchLog::pending_jobs() const {
  std::vector<Job> jobs;
  for (const Event& e : events_) {
    if (e.kind != Event::kJob) continue;
    const TrialRecord& t = trials_[static_cast<size_t>(e.trial)];
    for (const RungRecord& r : t.rungs) {
      if (r.rung != e.rung || r.finished) continue;
      Job job;
      job.kind = r.rung == t.rungs.front().rung ? JobKind::kStart : JobKind::kPromote;
      job.trial = t.id;
      job.rung = r.rung;
      job.budget = r.budget;
      job.previous_budget = r.previous_budget;
      job.bracket = t.bracket;
      jobs.push_back(job);
    }
  }
  return jobs;
}

int64_t SearchLog::reports() const {
  int64_t n = 0;
  for (const Event& e : events_) n += e.kind != Event::kJob;
  return n;
}

void SearchLog::replay_into(Scheduler& scheduler) const {
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    const std::string where = "event " + std::to_string(i) + " (trial " + std::to_string(e.trial) + ", rung " +
                              std::to_string(e.rung) + ")";
    if (e.kind == Event::kResult) {
      scheduler.report(e.trial, e.rung, e.metric);
      continue;
    }
    if (e.kind == Event::kFailure) {
      scheduler.report_failure(e.trial, e.rung);
      continue;
    }
    const Job job = scheduler.next_job();
    const RungRecord* recorded = nullptr;
    for (const RungRecord& r : trials_[static_cast<size_t>(e.trial)].rungs)
      if (r.rung == e.rung) recorded = &r;
    if (!job.runs() || job.trial != e.trial || job.rung != e.rung || recorded == nullptr ||
        job.budget != recorded->budget)
      invalid("replaying " + where + ": the scheduler now gives " +
              (job.runs() ? "trial " + std::to_string(job.trial) + ", rung " + std::to_string(job.rung) +
                                " with budget " + std::to_string(job.budget)
                          : std::string("'") + job_kind_name(job.kind) + "'") +
              " (was the file edited, or written by another version?)");
  }
}

Json SearchLog::to_json() const {
  Json j = Json::object();
  j["format"] = "chorus-tune-state";
  j["version"] = 1;
  j["search"] = header_.to_json();
  Json trials = Json::array();
  for (const TrialRecord& t : trials_) {
    Json tj = Json::object();
    tj["id"] = t.id;
    tj["bracket"] = t.bracket;
    tj["state"] = trial_state_name(t.state);
    tj["budget_used"] = t.budget_used();
    tj["config"] = t.config.to_json();
    Json rungs = Json::array();
    for (const RungRecord& r : t.rungs) {
      Json rj = Json::object();
      rj["rung"] = r.rung;
      rj["budget"] = r.budget;
      rj["previous_budget"] = r.previous_budget;
      rj["group"] = r.group;
      rj["attempts"] = r.attempts;
      rj["start"] = r.start_time;
      rj["end"] = r.end_time;
      rj["state"] = !r.finished ? "running" : r.failed ? "failed" : "done";
      if (r.finished && !r.failed) rj["metric"] = r.metric;
      if (r.failed) rj["error"] = r.error;
      rj["resource_used"] = r.resource_used;
      rungs.push_back(std::move(rj));
    }
    tj["rungs"] = std::move(rungs);
    trials.push_back(std::move(tj));
  }
  j["trials"] = std::move(trials);
  Json events = Json::array();
  for (const Event& e : events_) {
    Json ej = Json::array({Json(e.kind == Event::kJob ? "job" : e.kind == Event::kResult ? "result" : "failed"),
                           Json(e.trial), Json(e.rung)});
    if (e.kind == Event::kResult) ej.push_back(e.metric);
    events.push_back(ej);
  }
  j["events"] = events;
  return j;
}

SearchLog SearchLog::from_json(const Json& j) {
  if (!j.is_object() || !j.contains("format") || j.at("format") != "chorus-tune-state")
    invalid("it is not a chorus::tune state file (no \"format\": \"chorus-tune-state\")");
  const int64_t version = jf::integer(jf::member(j, "version"), "version");
  if (version != 1) invalid("its format version is " + std::to_string(version) + ", this build reads version 1");
  SearchLog log(SearchHeader::from_json(jf::member(j, "search")));
  for (const Json& tj : jf::array(jf::member(j, "trials"), "trials")) {
    TrialRecord t;
    t.id = jf::integer(jf::member(tj, "id"), "trial id");
    const std::string what = "trial " + std::to_string(t.id);
    if (t.id != static_cast<int64_t>(log.trials_.size()))
      invalid("trial ids must be 0, 1, 2, ... in order; found " + std::to_string(t.id) + " at position " +
              std::to_string(log.trials_.size()));
    t.bracket = static_cast<int>(jf::integer(jf::member(tj, "bracket"), what + " bracket"));
    t.state = parse_state(jf::string(jf::member(tj, "state"), what + " state"));
    for (const auto& member : jf::object(jf::member(tj, "config"), what + " config").items())
      t.config.set(member.key(), value_from_json(member.value(), what + " " + member.key()));
    for (const Json& rj : jf::array(jf::member(tj, "rungs"), what + " rungs")) {
      RungRecord r;
      r.rung = static_cast<int>(jf::integer(jf::member(rj, "rung"), what + " rung"));
      r.budget = jf::integer(jf::member(rj, "budget"), what + " budget");
      r.previous_budget = jf::integer(jf::member(rj, "previous_budget"), what + " previous_budget");
      r.group = static_cast<int>(jf::integer(jf::member(rj, "group"), what + " group"));
      r.attempts = static_cast<int>(jf::integer(jf::member(rj, "attempts"), what + " attempts"));
      r.start_time = jf::number(jf::member(rj, "start"), what + " start");
      r.end_time = jf::number(jf::member(rj, "end"), what + " end");
      const std::string& state = jf::string(jf::member(rj, "state"), what + " rung state");
      if (state != "running" && state != "failed" && state != "done")
        invalid(what + " rung state '" + state + "' is not running, failed or done");
      r.finished = state != "running";
      r.failed = state == "failed";
      if (state == "done") r.metric = jf::number(jf::member(rj, "metric"), what + " metric");
      if (r.failed) r.error = jf::string(jf::member(rj, "error"), what + " error");
      r.resource_used = jf::integer(jf::member(rj, "resource_used"), what + " resource_used");
      t.rungs.push_back(r);
    }
    log.trials_.push_back(std::move(t));
  }
  for (const Json& ej : jf::array(jf::member(j, "events"), "events")) {
    const Json& a = jf::array(ej, "an event");
    if (a.size() < 3) invalid("an event has " + std::to_string(a.size()) + " fields, expected [kind, trial, rung(, metric)]");
    Event e;
    const std::string& kind = jf::string(a[0], "an event's kind");
    e.trial = jf::integer(a[1], "an event's trial");
    e.rung = static_cast<int>(jf::integer(a[2], "an event's rung"));
    if (kind == "job") e.kind = Event::kJob;
    else if (kind == "result") e.kind = Event::kResult;
    else if (kind == "failed") e.kind = Event::kFailure;
    else invalid("unknown event kind '" + kind + "' (expected job, result or failed)");
    if (e.kind == Event::kResult) {
      if (a.size() != 4) invalid("a result event needs a metric");
      e.metric = jf::number(a[3], "an event's metric");
    }
    const TrialRecord* t = log.trial(e.trial);
    bool has_rung = false;
    if (t != nullptr)
      for (const RungRecord& r : t->rungs) has_rung |= r.rung == e.rung;
    if (!has_rung)
      invalid("an event names trial " + std::to_string(e.trial) + ", rung " + std::to_string(e.rung) +
              ", which the trials list lacks");
    log.events_.push_back(e);
  }
  return log;
}

}  // namespace tune
}  // namespace chorus
