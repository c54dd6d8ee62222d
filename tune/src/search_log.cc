#include "chorus/tune/search_log.h"

#include <cmath>
#include <cstdlib>

#include "chorus/status.h"

namespace chorus {
namespace tune {
namespace {

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
  if (j.is_string()) return ParamValue(j.as_string(what));
  const double d = j.as_number(what);
  // The space decides the type; check() compares with the sampled config.
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
  j.set("scheduler", scheduler);
  j.set("settings", settings);
  j.set("objective", objective_name(objective));
  j.set("seed", std::to_string(seed));  // a string: 64-bit seeds exceed a double's 53 bits
  j.set("max_budget", max_budget);
  j.set("groups", groups);
  j.set("space", space);
  return j;
}

SearchHeader SearchHeader::from_json(const Json& j) {
  SearchHeader h;
  h.scheduler = j.at("scheduler").as_string("search.scheduler");
  h.settings = j.at("settings");
  h.objective = parse_objective(j.at("objective").as_string("search.objective"));
  const std::string& seed = j.at("seed").as_string("search.seed");
  char* end = nullptr;
  h.seed = std::strtoull(seed.c_str(), &end, 10);
  if (seed.empty() || *end != '\0') invalid("search.seed must be a decimal number, not '" + seed + "'");
  h.max_budget = j.at("max_budget").as_int("search.max_budget");
  h.groups = static_cast<int>(j.at("groups").as_int("search.groups"));
  h.space = j.at("space");
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
  j.set("format", "chorus-tune-state");
  j.set("version", 1);
  j.set("search", header_.to_json());
  Json trials = Json::array();
  for (const TrialRecord& t : trials_) {
    Json tj = Json::object();
    tj.set("id", t.id);
    tj.set("bracket", t.bracket);
    tj.set("state", trial_state_name(t.state));
    tj.set("budget_used", t.budget_used());
    tj.set("config", t.config.to_json());
    Json rungs = Json::array();
    for (const RungRecord& r : t.rungs) {
      Json rj = Json::object();
      rj.set("rung", r.rung);
      rj.set("budget", r.budget);
      rj.set("previous_budget", r.previous_budget);
      rj.set("group", r.group);
      rj.set("attempts", r.attempts);
      rj.set("start", r.start_time);
      rj.set("end", r.end_time);
      rj.set("state", !r.finished ? "running" : r.failed ? "failed" : "done");
      if (r.finished && !r.failed) rj.set("metric", r.metric);
      if (r.failed) rj.set("error", r.error);
      rj.set("resource_used", r.resource_used);
      rungs.push_back(rj);
    }
    tj.set("rungs", rungs);
    trials.push_back(tj);
  }
  j.set("trials", trials);
  Json events = Json::array();
  for (const Event& e : events_) {
    Json ej = Json::array({Json(e.kind == Event::kJob ? "job" : e.kind == Event::kResult ? "result" : "failed"),
                           Json(e.trial), Json(e.rung)});
    if (e.kind == Event::kResult) ej.push_back(e.metric);
    events.push_back(ej);
  }
  j.set("events", events);
  return j;
}

SearchLog SearchLog::from_json(const Json& j) {
  if (!j.is_object() || j.find("format") == nullptr || !j.at("format").is_string() ||
      j.at("format").as_string("format") != "chorus-tune-state")
    invalid("it is not a chorus::tune state file (no \"format\": \"chorus-tune-state\")");
  const int64_t version = j.at("version").as_int("version");
  if (version != 1) invalid("its format version is " + std::to_string(version) + ", this build reads version 1");
  SearchLog log(SearchHeader::from_json(j.at("search")));
  for (const Json& tj : j.at("trials").as_array("trials")) {
    TrialRecord t;
    t.id = tj.at("id").as_int("trial id");
    const std::string what = "trial " + std::to_string(t.id);
    if (t.id != static_cast<int64_t>(log.trials_.size()))
      invalid("trial ids must be 0, 1, 2, ... in order; found " + std::to_string(t.id) + " at position " +
              std::to_string(log.trials_.size()));
    t.bracket = static_cast<int>(tj.at("bracket").as_int(what + " bracket"));
    t.state = parse_state(tj.at("state").as_string(what + " state"));
    for (const auto& [name, value] : tj.at("config").as_object(what + " config"))
      t.config.set(name, value_from_json(value, what + " " + name));
    for (const Json& rj : tj.at("rungs").as_array(what + " rungs")) {
      RungRecord r;
      r.rung = static_cast<int>(rj.at("rung").as_int(what + " rung"));
      r.budget = rj.at("budget").as_int(what + " budget");
      r.previous_budget = rj.at("previous_budget").as_int(what + " previous_budget");
      r.group = static_cast<int>(rj.at("group").as_int(what + " group"));
      r.attempts = static_cast<int>(rj.at("attempts").as_int(what + " attempts"));
      r.start_time = rj.at("start").as_number(what + " start");
      r.end_time = rj.at("end").as_number(what + " end");
      const std::string& state = rj.at("state").as_string(what + " rung state");
      if (state != "running" && state != "failed" && state != "done")
        invalid(what + " rung state '" + state + "' is not running, failed or done");
      r.finished = state != "running";
      r.failed = state == "failed";
      if (state == "done") r.metric = rj.at("metric").as_number(what + " metric");
      if (r.failed) r.error = rj.at("error").as_string(what + " error");
      r.resource_used = rj.at("resource_used").as_int(what + " resource_used");
      t.rungs.push_back(r);
    }
    log.trials_.push_back(std::move(t));
  }
  for (const Json& ej : j.at("events").as_array("events")) {
    const Json::Array& a = ej.as_array("an event");
    if (a.size() < 3) invalid("an event has " + std::to_string(a.size()) + " fields, expected [kind, trial, rung(, metric)]");
    Event e;
    const std::string& kind = a[0].as_string("an event's kind");
    e.trial = a[1].as_int("an event's trial");
    e.rung = static_cast<int>(a[2].as_int("an event's rung"));
    if (kind == "job") e.kind = Event::kJob;
    else if (kind == "result") e.kind = Event::kResult;
    else if (kind == "failed") e.kind = Event::kFailure;
    else invalid("unknown event kind '" + kind + "' (expected job, result or failed)");
    if (e.kind == Event::kResult) {
      if (a.size() != 4) invalid("a result event needs a metric");
      e.metric = a[3].as_number("an event's metric");
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
