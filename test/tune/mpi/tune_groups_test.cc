// The search over process sets under real mpirun ranks (np 2 and 4): groups
// train at the same time, a trial's allreduce averages over its group only,
// a trial that throws on one rank or diverges fails for its whole group and
// the search goes on (also when the rank throws inside a collective the
// others wait in: its group's set fails alone and is replaced), the same
// seed gives the same configurations, and a bad --ranks-per-trial is a
// clear error on every rank; ASHA and Hyperband over groups of 2 ranks make
// the decisions their papers' rules give. Every check on rank 0 is made
// against the search's log, with expectations computed here from the group
// layout (ranks [gK, (g+1)K)) and the rules written out again, not from the
// library.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "chorus/tune/asha.h"
#include "chorus/tune/distributed_search.h"
#include "chorus/tune/hyperband.h"
#include "chorus/tune/random_search.h"
#include "support/harness.h"

namespace chorus_test {
namespace {

using chorus::tune::AshaOptions;
using chorus::tune::AshaScheduler;
using chorus::tune::Config;
using chorus::tune::HyperbandOptions;
using chorus::tune::HyperbandScheduler;
using chorus::tune::Json;
using chorus::tune::RandomSearchOptions;
using chorus::tune::RandomSearchScheduler;
using chorus::tune::SearchLog;
using chorus::tune::SearchOptions;
using chorus::tune::SearchSpace;
using chorus::tune::TrialContext;
using chorus::tune::TrialRecord;
using chorus::tune::TrialState;

SearchSpace space() {
  SearchSpace s;
  s.add_uniform("x", 0.0, 1.0).add_choice("w", {int64_t{1}, int64_t{2}, int64_t{3}});
  return s;
}

// What rank r contributes to trial t's allreduce: distinct per rank and trial.
double contribution(int r, int64_t trial) { return 1000.0 * static_cast<double>(trial) + (r + 1) * (r + 1); }

// The average over group g's ranks, computed from the layout alone.
double group_average(int group, int k, int64_t trial) {
  double sum = 0;
  for (int r = group * k; r < (group + 1) * k; ++r) sum += contribution(r, trial);
  return sum / k;
}

// Trains "budget" steps: each one an allreduce (kAverage) within the
// trial's process set and a short sleep (so that groups overlap in time).
// Returns the averaged value, which rank 0 checks against the log.
double averaging_trial(TrialContext& ctx) {
  double averaged = 0;
  for (int64_t step = 0; step < ctx.budget; ++step) {
    double value = contribution(chorus::rank(), ctx.trial);
    chorus::AllreduceOptions options;
    options.process_set = ctx.process_set;
    chorus::allreduce("trial.value", chorus::Tensor(&value, chorus::DataType::kFloat64, {1}), options);
    averaged = value;
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  }
  return averaged;
}

std::string state_path(const std::string& what) { return "/tmp/chorus-tune-groups-" + shared_token() + "-" + what; }

class TuneGroups : public ChorusSuite {};

TEST_F(TuneGroups, GroupsTrainAtTheSameTimeAndAverageWithinTheirSet) {
  for (int k : {1, 2}) {
    if (size() % k != 0 || size() / k < 2) continue;  // needs two groups at least
    SCOPED_TRACE("ranks per trial " + std::to_string(k));
    const int groups = size() / k;
    RandomSearchOptions ro;
    ro.max_budget = 6;
    ro.trials = 2 * groups;
    RandomSearchScheduler scheduler(ro);
    SearchOptions options;
    options.seed = 11;
    const std::optional<SearchLog> log =
        chorus::tune::run_distributed_search(space(), scheduler, averaging_trial, k, options);
    ASSERT_EQ(log.has_value(), rank() == 0);
    if (rank() != 0) continue;
    EXPECT_EQ(log->header().groups, groups);
    ASSERT_EQ(log->trials().size(), static_cast<size_t>(2 * groups));
    std::set<int> groups_used;
    for (const TrialRecord& t : log->trials()) {
      ASSERT_EQ(t.rungs.size(), 1u);
      const auto& rung = t.rungs[0];
      EXPECT_EQ(t.state, TrialState::kCompleted) << "trial " << t.id << ": " << rung.error;
      ASSERT_GE(rung.group, 0);
      ASSERT_LT(rung.group, groups);
      groups_used.insert(rung.group);
      // The average over the trial's group: not over the job, nor one rank.
      EXPECT_DOUBLE_EQ(rung.metric, group_average(rung.group, k, t.id)) << "trial " << t.id;
      EXPECT_EQ(rung.resource_used, 6);
    }
    EXPECT_EQ(groups_used.size(), static_cast<size_t>(groups));
    // Some two jobs on different groups were running at the same time.
    bool overlap = false;
    for (const TrialRecord& a : log->trials())
      for (const TrialRecord& b : log->trials()) {
        const auto &ra = a.rungs[0], &rb = b.rungs[0];
        if (ra.group != rb.group && ra.start_time < rb.end_time && rb.start_time < ra.end_time) overlap = true;
      }
    EXPECT_TRUE(overlap) << "no two groups' jobs overlap in time";
  }
}

// Trial 1 throws on the last rank of its group only, after its collectives;
// trial 2 returns NaN on the group's first rank only; trial 3 throws on every
// rank. Each is recorded failed for its whole group, and the search goes on.
TEST_F(TuneGroups, FailingTrialsFailTheirGroupAndTheSearchGoesOn) {
  const int k = size() >= 4 ? 2 : size();
  const auto trial = [k](TrialContext& ctx) -> double {
    const double averaged = averaging_trial(ctx);
    const int first = ctx.group * k, last = first + k - 1;
    if (ctx.trial == 1 && chorus::rank() == last) throw std::runtime_error("boom on the last rank");
    if (ctx.trial == 2 && chorus::rank() == first) return std::nan("");
    if (ctx.trial == 3) throw std::runtime_error("boom everywhere");
    return averaged;
  };
  AshaOptions ao;
  ao.max_budget = 4;
  ao.eta = 2;
  ao.max_trials = 6;
  AshaScheduler scheduler(ao);
  SearchOptions options;
  options.seed = 5;
  const std::optional<SearchLog> log = chorus::tune::run_distributed_search(space(), scheduler, trial, k, options);
  if (rank() != 0) return;
  ASSERT_TRUE(log.has_value());
  ASSERT_EQ(log->trials().size(), 6u);
  for (const TrialRecord& t : log->trials()) {
    const auto& first = t.rungs.at(0);
    const std::string last_rank = "rank " + std::to_string(first.group * k + k - 1) + ": ";
    const std::string first_rank = k > 1 ? "rank " + std::to_string(first.group * k) + ": " : "";
    if (t.id == 1) {
      EXPECT_EQ(t.state, TrialState::kFailed);
      EXPECT_EQ(first.error, (k > 1 ? last_rank : "") + "the trial threw: boom on the last rank");
    } else if (t.id == 2) {
      EXPECT_EQ(t.state, TrialState::kFailed);
      EXPECT_EQ(first.error, first_rank + "the metric is NaN (the trial diverged)");
    } else if (t.id == 3) {
      // Every member throws and fails the group's set: the error is that of
      // the member whose failure reached the coordinator first (k is 2).
      EXPECT_EQ(t.state, TrialState::kFailed);
      EXPECT_THAT(first.error, ::testing::AnyOf(::testing::Eq(first_rank + "the trial threw: boom everywhere"),
                                                ::testing::Eq(last_rank + "the trial threw: boom everywhere")));
    } else {
      EXPECT_NE(t.state, TrialState::kFailed) << "trial " << t.id << ": " << first.error;
      EXPECT_DOUBLE_EQ(first.metric, group_average(first.group, k, t.id));
    }
    for (const auto& r : t.rungs) EXPECT_TRUE(r.finished) << "trial " << t.id << " rung " << r.rung;
  }
}

// Trial 1's last rank throws inside a collective of the trial (its
// allreduce refuses an output of another dtype) while the group's other
// ranks wait in that collective for it. They get the set's failure naming
// that rank instead of waiting for ever; the trial is failed for the group,
// the group's set is replaced, and the search finishes, the group's later
// trials averaging over its new set. At np 4 the other group (group 0, which
// gets trial 0 first) trains on: rank 0 holds trial 0 until the driver has
// logged trial 1's failure, so that group 1 is sure to get a later trial.
TEST_F(TuneGroups, ARankThatThrowsInsideACollectiveFailsItsGroupAloneAndTheSearchGoesOn) {
  const int k = 2;
  const int groups = size() / k;
  int failing_rank = -1;  // the last rank of trial 1's group, on its members
  std::string seen;       // what trial 1 threw on this rank
  std::mutex mu;
  std::condition_variable cv;
  bool trial_1_failed = false;  // rank 0: the driver has reported it
  const auto trial = [&](TrialContext& ctx) -> double {
    if (ctx.trial == 0 && groups > 1 && chorus::rank() == 0) {
      std::unique_lock<std::mutex> lock(mu);
      EXPECT_TRUE(cv.wait_for(lock, kWaitTimeout, [&] { return trial_1_failed; }))
          << "trial 1's failure was never reported while trial 0 ran";
    }
    double averaged = 0;
    for (int64_t step = 0; step < ctx.budget; ++step) {
      double value = contribution(chorus::rank(), ctx.trial);
      chorus::AllreduceOptions options;
      options.process_set = ctx.process_set;
      try {
        if (ctx.trial == 1) failing_rank = ctx.group * k + k - 1;
        if (ctx.trial == 1 && step == 1 && chorus::rank() == failing_rank) {
          float wrong = 0;
          chorus::allreduce("trial.value", chorus::Tensor(&value, chorus::DataType::kFloat64, {1}),
                            chorus::Tensor(&wrong, chorus::DataType::kFloat32, {1}), options);
        }
        chorus::allreduce("trial.value", chorus::Tensor(&value, chorus::DataType::kFloat64, {1}), options);
      } catch (const chorus::Error& e) {
        if (ctx.trial == 1) seen = e.what();
        throw;
      }
      averaged = value;
    }
    return averaged;
  };
  RandomSearchOptions ro;
  ro.max_budget = 3;
  ro.trials = 3 * groups;
  RandomSearchScheduler scheduler(ro);
  SearchOptions options;
  options.seed = 3;
  options.progress = [&](const std::string& line) {
    if (line.rfind("trial 1 rung 0 failed", 0) != 0) return;
    std::lock_guard<std::mutex> lock(mu);
    trial_1_failed = true;
    cv.notify_all();
  };
  const std::optional<SearchLog> log = chorus::tune::run_distributed_search(space(), scheduler, trial, k, options);
  ASSERT_EQ(log.has_value(), rank() == 0);
  // Every set the search added is gone, the replacement included.
  EXPECT_EQ(chorus::process_sets().size(), 1u);
  const std::string refused = "output is float32 [1] on cpu; expected the input's float64 [1] on cpu";
  if (failing_rank == rank()) {
    EXPECT_THAT(seen, ::testing::HasSubstr(refused));
  } else if (failing_rank >= 0) {
    // A member that waited in the collective: the set's failure names the rank.
    EXPECT_THAT(seen, ::testing::HasSubstr("failed on rank " + std::to_string(failing_rank) + ": the trial threw: "));
    EXPECT_THAT(seen, ::testing::HasSubstr(refused));
  }
  if (rank() != 0) return;
  ASSERT_EQ(log->trials().size(), static_cast<size_t>(3 * groups));
  int failed_group = -1;
  for (const TrialRecord& t : log->trials()) {
    const auto& rung = t.rungs.at(0);
    if (t.id == 1) {
      failed_group = rung.group;
      EXPECT_EQ(t.state, TrialState::kFailed);
      EXPECT_THAT(rung.error, ::testing::StartsWith("rank " + std::to_string(rung.group * k + k - 1) +
                                                    ": the trial threw: "));
      EXPECT_THAT(rung.error, ::testing::HasSubstr(refused));
    }
  }
  bool group_trained_after = false;
  for (const TrialRecord& t : log->trials()) {
    const auto& rung = t.rungs.at(0);
    if (t.id == 1) continue;
    EXPECT_EQ(t.state, TrialState::kCompleted) << "trial " << t.id << ": " << rung.error;
    EXPECT_DOUBLE_EQ(rung.metric, group_average(rung.group, k, t.id)) << "trial " << t.id;
    if (rung.group == failed_group && t.id > 1) group_trained_after = true;
  }
  EXPECT_TRUE(group_trained_after) << "group " << failed_group << " ran no trial after its set failed";
}

// Two searches with one seed hand out the same configurations; another seed
// others. The trial returns its configuration's x, so the log's metric
// proves that the group trained the configuration rank 0 recorded.
TEST_F(TuneGroups, TheSameSeedGivesTheSameConfigurations) {
  const int k = size() >= 4 ? 2 : 1;
  const auto trial = [](TrialContext& ctx) {
    averaging_trial(ctx);
    return ctx.hyperparameters().get_double("x");
  };
  std::vector<std::vector<Config>> configs;
  for (uint64_t seed : {7u, 7u, 8u}) {
    RandomSearchOptions ro;
    ro.max_budget = 1;
    ro.trials = 5;
    RandomSearchScheduler scheduler(ro);
    SearchOptions options;
    options.seed = seed;
    const std::optional<SearchLog> log = chorus::tune::run_distributed_search(space(), scheduler, trial, k, options);
    if (rank() != 0) continue;
    configs.emplace_back();
    for (const TrialRecord& t : log->trials()) {
      configs.back().push_back(t.config);
      EXPECT_DOUBLE_EQ(t.rungs.at(0).metric, t.config.get_double("x")) << "trial " << t.id;
    }
  }
  if (rank() != 0) return;
  ASSERT_EQ(configs.size(), 3u);
  ASSERT_EQ(configs[0].size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_TRUE(configs[0][i] == configs[1][i]) << configs[0][i].to_string() << " vs " << configs[1][i].to_string();
    EXPECT_FALSE(configs[0][i] == configs[2][i]) << "seeds 7 and 8 gave trial " << i << " the same configuration";
  }
}

// --- ASHA and Hyperband over groups of 2 ranks --------------------------------

// The metric a trial reaches at `budget`: a function of its configuration and
// budget alone, whose order changes from budget to budget (a scheduler that
// ranked a rung by an earlier rung's results would promote others).
double scripted_metric(const Config& config, int64_t budget) {
  return std::fmod(config.get_double("x") * 7919.0 * static_cast<double>(budget), 1.0);
}

// Every rank of the group computes the metric from the configuration it
// derived itself and the group averages it: the average is that metric
// exactly only when every rank trained the same configuration.
double scripted_trial(TrialContext& ctx) {
  double value = scripted_metric(ctx.hyperparameters(), ctx.budget);
  chorus::AllreduceOptions options;
  options.process_set = ctx.process_set;
  for (int64_t step = ctx.previous_budget; step < ctx.budget; ++step) {
    double mine = value;
    chorus::allreduce("trial.metric", chorus::Tensor(&mine, chorus::DataType::kFloat64, {1}), options);
    value = mine;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return value;
}

// A rung's results best first: the higher metric (maximised), ties to the
// lower trial id.
using Results = std::vector<std::pair<int64_t, double>>;
Results best_first(Results results) {
  std::sort(results.begin(), results.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return results;
}

// Each rung record's metric is the scripted one for its trial and budget,
// trained by a group of the layout.
void expect_scripted_metrics(const chorus::tune::SearchLog& log, int groups) {
  for (const TrialRecord& t : log.trials()) {
    for (const auto& r : t.rungs) {
      EXPECT_TRUE(r.finished && !r.failed) << "trial " << t.id << " rung " << r.rung << ": " << r.error;
      EXPECT_EQ(r.metric, scripted_metric(t.config, r.budget)) << "trial " << t.id << " rung " << r.rung;
      EXPECT_GE(r.group, 0);
      EXPECT_LT(r.group, groups);
    }
  }
}

// ASHA (Li et al. 2020, Algorithm 2), replayed over the log's events: at each
// job handed out, the job the rule gives for the results reported so far
// (the order of jobs and results depends on which group finished first, so
// the reference follows the recorded order rather than a fixed one).
TEST_F(TuneGroups, AshaOverGroupsOfTwoPromotesAsItsRuleSays) {
  ASSERT_EQ(size() % 2, 0) << "groups of 2 ranks need an even number of ranks (this test runs at np 2 and 4)";
  const int k = 2, groups = size() / k;
  AshaOptions ao;
  ao.min_budget = 1;
  ao.max_budget = 4;
  ao.eta = 2;
  ao.max_trials = 8;
  AshaScheduler scheduler(ao);
  SearchOptions options;
  options.seed = 21;
  const std::optional<SearchLog> log = chorus::tune::run_distributed_search(space(), scheduler, scripted_trial, k, options);
  ASSERT_EQ(log.has_value(), rank() == 0);
  if (rank() != 0) return;
  EXPECT_EQ(log->header().groups, groups);
  ASSERT_EQ(log->trials().size(), 8u);
  expect_scripted_metrics(*log, groups);

  const std::vector<int64_t> budgets = {1, 2, 4};  // r eta^k up to R
  std::vector<Results> rungs(budgets.size());
  std::vector<std::set<int64_t>> promoted(budgets.size());
  int64_t started = 0, jobs = 0;
  // The job ASHA must hand out now: (trial, rung), or (-1, -1) for none.
  const auto next = [&]() -> std::pair<int64_t, int> {
    for (int r = static_cast<int>(budgets.size()) - 2; r >= 0; --r) {
      const Results order = best_first(rungs[static_cast<size_t>(r)]);
      for (size_t i = 0; i < order.size() / static_cast<size_t>(ao.eta); ++i) {
        if (!promoted[static_cast<size_t>(r)].count(order[i].first)) return {order[i].first, r + 1};
      }
    }
    if (started < ao.max_trials) return {started, 0};
    return {-1, -1};
  };
  const Json events = log->to_json().at("events");
  for (const Json& e : events) {
    const std::string kind = e.at(0).get<std::string>();
    const int64_t trial = e.at(1).get<int64_t>();
    const int rung = e.at(2).get<int>();
    if (kind == "job") {
      ++jobs;
      const std::pair<int64_t, int> expected = next();
      ASSERT_EQ(std::make_pair(trial, rung), expected) << "job " << jobs << " (" << e.dump() << ")";
      if (rung == 0) ++started;
      else promoted[static_cast<size_t>(rung) - 1].insert(trial);
      const TrialRecord* t = log->trial(trial);
      ASSERT_NE(t, nullptr);
      ASSERT_GT(t->rungs.size(), static_cast<size_t>(rung));
      EXPECT_EQ(t->rungs[static_cast<size_t>(rung)].budget, budgets[static_cast<size_t>(rung)]);
      EXPECT_EQ(t->rungs[static_cast<size_t>(rung)].previous_budget,
                rung == 0 ? 0 : budgets[static_cast<size_t>(rung) - 1]);
    } else {
      ASSERT_EQ(kind, "result") << e.dump();
      rungs[static_cast<size_t>(rung)].push_back({trial, e.at(3).get<double>()});
    }
  }
  // The search ended with every trial started and nothing left to promote.
  EXPECT_EQ(started, 8);
  EXPECT_EQ(next(), std::make_pair(int64_t{-1}, -1));
  // 8 trials at budget 1, half of them promoted to 2, half of those to 4.
  EXPECT_EQ(rungs[0].size(), 8u);
  EXPECT_EQ(rungs[1].size(), 4u);
  EXPECT_EQ(rungs[2].size(), 2u);
  std::set<int> groups_used;
  for (const TrialRecord& t : log->trials())
    for (const auto& r : t.rungs) groups_used.insert(r.group);
  EXPECT_EQ(groups_used.size(), static_cast<size_t>(groups));
}

// Hyperband (Li et al. 2018, Algorithm 1) with R 4, eta 2: brackets s = 2, 1,
// 0 of (n_i, r_i) = (4,1) (2,2) (1,4); (3,2) (1,4); (3,4). Each rung above the
// first holds exactly the best n_i of the bracket's rung below; which trial
// ids a bracket gets depends on which group asked first, so the check is per
// bracket, by the trials the log put in it.
TEST_F(TuneGroups, HyperbandOverGroupsOfTwoKeepsTheBestOfEachRung) {
  ASSERT_EQ(size() % 2, 0) << "groups of 2 ranks need an even number of ranks (this test runs at np 2 and 4)";
  const int k = 2, groups = size() / k;
  HyperbandOptions ho;
  ho.max_budget = 4;
  ho.eta = 2;
  HyperbandScheduler scheduler(ho);
  SearchOptions options;
  options.seed = 23;
  const std::optional<SearchLog> log = chorus::tune::run_distributed_search(space(), scheduler, scripted_trial, k, options);
  ASSERT_EQ(log.has_value(), rank() == 0);
  if (rank() != 0) return;
  ASSERT_EQ(log->trials().size(), 4u + 3u + 3u);
  expect_scripted_metrics(*log, groups);

  struct Rung {
    size_t configurations;
    int64_t budget;
  };
  const std::map<int, std::vector<Rung>> plan = {
      {2, {{4, 1}, {2, 2}, {1, 4}}}, {1, {{3, 2}, {1, 4}}}, {0, {{3, 4}}}};
  std::map<int, std::vector<const TrialRecord*>> by_bracket;
  for (const TrialRecord& t : log->trials()) by_bracket[t.bracket].push_back(&t);
  ASSERT_EQ(by_bracket.size(), plan.size());
  for (const auto& [s, rungs] : plan) {
    SCOPED_TRACE("bracket s=" + std::to_string(s));
    const std::vector<const TrialRecord*>& trials = by_bracket[s];
    ASSERT_EQ(trials.size(), rungs[0].configurations);
    for (size_t i = 0; i < rungs.size(); ++i) {
      // Who reached rung i, with their results there.
      Results here;
      std::set<int64_t> reached;
      for (const TrialRecord* t : trials) {
        if (t->rungs.size() <= i) continue;
        const auto& r = t->rungs[i];
        EXPECT_EQ(r.budget, rungs[i].budget) << "trial " << t->id << " rung " << i;
        EXPECT_EQ(r.previous_budget, i == 0 ? 0 : rungs[i - 1].budget) << "trial " << t->id << " rung " << i;
        here.push_back({t->id, r.metric});
        reached.insert(t->id);
      }
      EXPECT_EQ(here.size(), rungs[i].configurations) << "rung " << i;
      if (i == 0) continue;
      // The best n_i of rung i - 1 by their results at its budget.
      Results below;
      for (const TrialRecord* t : trials)
        if (t->rungs.size() > i - 1) below.push_back({t->id, t->rungs[i - 1].metric});
      const Results order = best_first(below);
      std::set<int64_t> best;
      for (size_t j = 0; j < rungs[i].configurations && j < order.size(); ++j) best.insert(order[j].first);
      EXPECT_EQ(reached, best) << "rung " << i;
    }
  }
}

// A bad split is the same clear error on every rank, before any collective.
TEST_F(TuneGroups, ABadRanksPerTrialIsAClearErrorOnEveryRank) {
  RandomSearchOptions ro;
  ro.trials = 1;
  RandomSearchScheduler scheduler(ro);
  for (int k : {0, -1, size() + 1, 3}) {
    if (k == 3 && size() % 3 == 0) continue;
    const chorus::Status status = thrown_by([&] {
      chorus::tune::run_distributed_search(space(), scheduler, averaging_trial, k, SearchOptions{});
    });
    EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument) << status.to_string();
    EXPECT_NE(status.message().find("--ranks-per-trial"), std::string::npos) << status.to_string();
  }
  // The runtime is still usable: a search after the errors runs.
  RandomSearchScheduler again(ro);
  const auto log = chorus::tune::run_distributed_search(space(), again, averaging_trial, 1, SearchOptions{});
  EXPECT_EQ(log.has_value(), rank() == 0);
}

// Rank 0's driver fails (its state file belongs to another search): every
// rank leaves its group and throws rank 0's message.
TEST_F(TuneGroups, ASearchRankZeroCannotRunIsAnErrorOnEveryRank) {
  const std::string path = state_path("foreign");
  {
    RandomSearchOptions ro;
    ro.trials = 1;
    ro.max_budget = 1;
    RandomSearchScheduler scheduler(ro);
    SearchOptions options;
    options.seed = 1;
    options.state_path = path;
    chorus::tune::run_distributed_search(space(), scheduler, averaging_trial, 1, options);
  }
  RandomSearchOptions ro;
  ro.trials = 1;
  ro.max_budget = 1;
  RandomSearchScheduler scheduler(ro);
  SearchOptions options;
  options.seed = 2;
  options.state_path = path;
  options.resume = true;
  const chorus::Status status = thrown_by([&] {
    chorus::tune::run_distributed_search(space(), scheduler, averaging_trial, 1, options);
  });
  EXPECT_NE(status.message().find("belongs to another search: its seed is 1, this search's is 2"),
            std::string::npos)
      << status.to_string();
  test_barrier();
  if (rank() == 0) ::unlink(path.c_str());
}

}  // namespace
}  // namespace chorus_test
