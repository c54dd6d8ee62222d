#include "chorus/tune/hyperband.h"

#include <algorithm>

#include "chorus/status.h"

namespace chorus {
namespace tune {

std::vector<HyperbandBracket> hyperband_brackets(int64_t max_budget, int64_t eta) {
  if (max_budget < 1)
    throw Error(Status::InvalidArgument("Hyperband: the maximum budget R must be at least 1 unit, got " +
                                        std::to_string(max_budget)));
  if (eta < 2)
    throw Error(Status::InvalidArgument("Hyperband: the reduction factor eta must be at least 2, got " +
                                        std::to_string(eta)));
  const int s_max = int_log(max_budget, eta);
  std::vector<HyperbandBracket> brackets;
  for (int s = s_max; s >= 0; --s) {
    HyperbandBracket bracket;
    bracket.s = s;
    // n = ceil(B/R * eta^s / (s+1)) with B/R = s_max + 1, in integers.
    const int64_t numerator = int64_t{s_max + 1} * int_pow(eta, s);
    const int64_t n = (numerator + s) / (s + 1);
    for (int i = 0; i <= s; ++i) {
      HyperbandRung rung;
      rung.configurations = n / int_pow(eta, i);            // floor(n eta^-i)
      rung.budget = max_budget / int_pow(eta, s - i);       // floor(R eta^(i-s))
      bracket.rungs.push_back(rung);
    }
    brackets.push_back(std::move(bracket));
  }
  return brackets;
}

HyperbandScheduler::HyperbandScheduler(const HyperbandOptions& options)
    : options_(options), plan_(hyperband_brackets(options.max_budget, options.eta)) {
  for (const HyperbandBracket& b : plan_) {
    BracketState st;
    st.rungs.resize(b.rungs.size());
    state_.push_back(std::move(st));
  }
}

Json HyperbandScheduler::settings() const {
  Json j = Json::object();
  j["max_budget"] = options_.max_budget;
  j["eta"] = options_.eta;
  j["objective"] = objective_name(options_.objective);
  return j;
}

Job HyperbandScheduler::next_job() {
  for (size_t b = 0; b < plan_.size(); ++b) {
    const HyperbandBracket& plan = plan_[b];
    BracketState& st = state_[b];
    Job job;
    job.bracket = plan.s;
    if (st.started < plan.rungs[0].configurations) {
      job.kind = JobKind::kStart;
      job.trial = next_trial_++;
      job.rung = 0;
      job.budget = plan.rungs[0].budget;
      ++st.started;
      st.rungs[0].members.push_back(job.trial);
      bracket_of_[job.trial] = b;
      ++in_flight_;
      return job;
    }
    for (size_t i = 1; i < st.rungs.size(); ++i) {
      RungState& rung = st.rungs[i];
      if (rung.promotions_issued < rung.promotions.size()) {
        job.kind = JobKind::kPromote;
        job.trial = rung.promotions[rung.promotions_issued++];
        job.rung = static_cast<int>(i);
        job.budget = plan.rungs[i].budget;
        job.previous_budget = plan.rungs[i - 1].budget;
        rung.members.push_back(job.trial);
        ++in_flight_;
        return job;
      }
    }
  }
  Job job;
  job.kind = in_flight_ > 0 ? JobKind::kWait : JobKind::kDone;
  return job;
}

void HyperbandScheduler::record(int64_t trial, int rung, RungEntry entry) {
  const auto it = bracket_of_.find(trial);
  if (it == bracket_of_.end() || rung < 0 || static_cast<size_t>(rung) >= state_[it->second].rungs.size())
    throw Error(Status::InvalidArgument("Hyperband: a report for trial " + std::to_string(trial) + " at rung " +
                                        std::to_string(rung) + ", which has no job there"));
  RungState& r = state_[it->second].rungs[static_cast<size_t>(rung)];
  const bool member = std::find(r.members.begin(), r.members.end(), trial) != r.members.end();
  const bool reported = std::any_of(r.results.begin(), r.results.end(),
                                    [trial](const RungEntry& e) { return e.trial == trial; });
  if (!member || reported)
    throw Error(Status::InvalidArgument("Hyperband: a report for trial " + std::to_string(trial) + " at rung " +
                                        std::to_string(rung) + ", which has no job in flight there"));
  entry.trial = trial;
  r.results.push_back(entry);
  --in_flight_;
  close_completed_rungs(it->second);
}

void HyperbandScheduler::report(int64_t trial, int rung, double metric) {
  RungEntry e;
  e.metric = metric;
  record(trial, rung, e);
}

void HyperbandScheduler::report_failure(int64_t trial, int rung) {
  RungEntry e;
  e.failed = true;
  record(trial, rung, e);
}

// A rung completes when every job it will get has reported: rung 0 after all
// n configurations, rung i after the promotions out of rung i - 1 (possibly
// none, when all of them failed). A completed rung i < s promotes its best
// floor(n_i / eta) successful trials into rung i + 1.
void HyperbandScheduler::close_completed_rungs(size_t bracket) {
  const HyperbandBracket& plan = plan_[bracket];
  BracketState& st = state_[bracket];
  for (size_t i = 0; i < st.rungs.size(); ++i) {
    RungState& r = st.rungs[i];
    if (r.complete) continue;
    const bool all_issued = i == 0 ? st.started == plan.rungs[0].configurations
                                   : st.rungs[i - 1].complete && r.promotions_issued == r.promotions.size();
    if (!all_issued || r.results.size() != r.members.size()) return;
    r.complete = true;
    if (i + 1 < st.rungs.size()) {
      const int64_t keep = plan.rungs[i].configurations / options_.eta;
      for (const RungEntry& e : ranked(options_.objective, r.results)) {
        if (static_cast<int64_t>(st.rungs[i + 1].promotions.size()) >= keep || e.failed) break;
        st.rungs[i + 1].promotions.push_back(e.trial);
      }
    }
  }
}

}  // namespace tune
}  // namespace chorus
