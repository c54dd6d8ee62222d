// ASHA's decisions on scripted sequences of results (Li et al. 2020,
// Algorithm 2), its rung budgets and its bad settings.
#include <gtest/gtest.h>

#include "chorus/status.h"
#include "chorus/tune/asha.h"
#include "chorus/tune/random_search.h"

namespace chorus {
namespace tune {
namespace {

void expect_start(const Job& job, int64_t trial, int64_t budget) {
  EXPECT_EQ(job.kind, JobKind::kStart) << "expected a start of trial " << trial;
  EXPECT_EQ(job.trial, trial);
  EXPECT_EQ(job.rung, 0);
  EXPECT_EQ(job.budget, budget);
  EXPECT_EQ(job.previous_budget, 0);
}

void expect_promote(const Job& job, int64_t trial, int rung, int64_t budget, int64_t previous) {
  EXPECT_EQ(job.kind, JobKind::kPromote) << "expected a promotion of trial " << trial;
  EXPECT_EQ(job.trial, trial);
  EXPECT_EQ(job.rung, rung);
  EXPECT_EQ(job.budget, budget);
  EXPECT_EQ(job.previous_budget, previous);
}

TEST(AshaRungBudgets, PowersOfEtaUpToR) {
  EXPECT_EQ(asha_rung_budgets({1, 9, 3, 0, 10, Objective::kMaximize}), (std::vector<int64_t>{1, 3, 9}));
  EXPECT_EQ(asha_rung_budgets({1, 81, 3, 0, 10, Objective::kMaximize}), (std::vector<int64_t>{1, 3, 9, 27, 81}));
  EXPECT_EQ(asha_rung_budgets({1, 81, 3, 2, 10, Objective::kMaximize}), (std::vector<int64_t>{9, 27, 81}));
  EXPECT_EQ(asha_rung_budgets({2, 16, 2, 0, 10, Objective::kMaximize}), (std::vector<int64_t>{2, 4, 8, 16}));
  // R not r eta^k: the top rung is R itself.
  EXPECT_EQ(asha_rung_budgets({1, 5, 3, 0, 10, Objective::kMaximize}), (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(asha_rung_budgets({4, 4, 3, 0, 10, Objective::kMaximize}), (std::vector<int64_t>{4}));
}

TEST(AshaRungBudgets, BadSettingsAreClearErrors) {
  const auto message = [](AshaOptions o) -> std::string {
    try {
      AshaScheduler s(o);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(message({0, 9, 3, 0, 10, Objective::kMaximize}), "ASHA: the minimum budget r must be at least 1 unit, got 0");
  EXPECT_EQ(message({1, 9, 1, 0, 10, Objective::kMaximize}), "ASHA: the reduction factor eta must be at least 2, got 1");
  EXPECT_EQ(message({1, 9, 3, -1, 10, Objective::kMaximize}),
            "ASHA: the minimum early-stopping rate s must be at least 0, got -1");
  EXPECT_EQ(message({1, 9, 3, 0, 0, Objective::kMaximize}), "ASHA: the number of trials must be at least 1, got 0");
  EXPECT_EQ(message({1, 9, 3, 3, 10, Objective::kMaximize}),
            "ASHA: the first rung's budget r eta^s (r 1, eta 3, s 3) exceeds the maximum budget R 9");
  EXPECT_EQ(message({10, 9, 3, 0, 10, Objective::kMaximize}),
            "ASHA: the first rung's budget r eta^s (r 10, eta 3, s 0) exceeds the maximum budget R 9");
}

// The paper's rule step by step: a trial is promoted as soon as it is in
// the top floor(|rung| / eta) of its rung and was not promoted yet; else a
// new trial starts; nobody waits for a rung to fill.
TEST(AshaScheduler, ScriptedSequence) {
  AshaScheduler s({1, 9, 3, 0, 6, Objective::kMaximize});
  expect_start(s.next_job(), 0, 1);
  expect_start(s.next_job(), 1, 1);
  expect_start(s.next_job(), 2, 1);
  s.report(0, 0, 0.5);  // rung 0: 1 result, top 0
  expect_start(s.next_job(), 3, 1);
  s.report(1, 0, 0.9);
  s.report(2, 0, 0.1);  // rung 0: 3 results, top 1 = trial 1
  expect_promote(s.next_job(), 1, 1, 3, 1);
  expect_start(s.next_job(), 4, 1);  // trial 1 already promoted
  s.report(3, 0, 0.95);              // rung 0: 4 results, top 1 = trial 3
  expect_promote(s.next_job(), 3, 1, 3, 1);
  s.report_failure(4, 0);  // rung 0: 5 results (one failed), top 1 = trial 3, promoted
  expect_start(s.next_job(), 5, 1);  // the 6th and last new trial
  s.report(1, 1, 0.7);               // rung 1: 1 result, top 0
  EXPECT_EQ(s.next_job().kind, JobKind::kWait);
  EXPECT_EQ(s.in_flight(), 2);       // 3 at rung 1, 5 at rung 0
  s.report(5, 0, 0.92);              // rung 0: 6 results, top 2 = trials 3, 5
  expect_promote(s.next_job(), 5, 1, 3, 1);
  s.report(3, 1, 0.8);               // rung 1: 2 results, top 0
  EXPECT_EQ(s.next_job().kind, JobKind::kWait);
  s.report(5, 1, 0.85);              // rung 1: 3 results, top 1 = trial 5
  expect_promote(s.next_job(), 5, 2, 9, 3);
  EXPECT_EQ(s.next_job().kind, JobKind::kWait);
  s.report(5, 2, 0.97);  // the top rung promotes nothing
  EXPECT_EQ(s.next_job().kind, JobKind::kDone);
  EXPECT_EQ(s.in_flight(), 0);
}

TEST(AshaScheduler, PromotesFromTheHighestRungFirst) {
  AshaScheduler s({1, 4, 2, 0, 4, Objective::kMinimize});  // rungs 1, 2, 4
  expect_start(s.next_job(), 0, 1);
  expect_start(s.next_job(), 1, 1);
  s.report(0, 0, 2.0);
  s.report(1, 0, 1.0);                       // top 1 of 2 = trial 1 (lower loss)
  expect_promote(s.next_job(), 1, 1, 2, 1);
  expect_start(s.next_job(), 2, 1);
  s.report(1, 1, 0.5);
  s.report(2, 0, 0.9);                       // rung 0: top 1 of 3 = trial 2
  expect_promote(s.next_job(), 2, 1, 2, 1);
  expect_start(s.next_job(), 3, 1);
  s.report(2, 1, 0.7);                       // rung 1: top 1 of 2 = trial 1
  s.report(3, 0, 0.1);                       // rung 0: top 2 of 4 = trials 3, 2
  expect_promote(s.next_job(), 1, 2, 4, 2);  // rung 1 before rung 0
  expect_promote(s.next_job(), 3, 1, 2, 1);
  EXPECT_EQ(s.next_job().kind, JobKind::kWait);
}

TEST(AshaScheduler, FailedTrialsAreNeverPromoted) {
  AshaScheduler s({1, 9, 3, 0, 3, Objective::kMaximize});
  for (int i = 0; i < 3; ++i) s.next_job();
  s.report_failure(0, 0);
  s.report_failure(1, 0);
  s.report_failure(2, 0);
  EXPECT_EQ(s.next_job().kind, JobKind::kDone);
}

TEST(AshaScheduler, TiesGoToTheOlderTrial) {
  AshaScheduler s({1, 3, 3, 0, 3, Objective::kMaximize});
  for (int i = 0; i < 3; ++i) s.next_job();
  s.report(2, 0, 1.0);
  s.report(1, 0, 1.0);
  s.report(0, 0, 0.5);
  expect_promote(s.next_job(), 1, 1, 3, 1);
}

TEST(AshaScheduler, AReportWithoutAJobIsRefused) {
  AshaScheduler s({1, 9, 3, 0, 3, Objective::kMaximize});
  try {
    s.report(0, 0, 1.0);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "ASHA: a report for trial 0 at rung 0, which has no job in flight there");
  }
}

TEST(RandomSearch, EveryTrialRunsToTheFullBudget) {
  RandomSearchScheduler s({27, 3, Objective::kMinimize});
  for (int64_t t = 0; t < 3; ++t) expect_start(s.next_job(), t, 27);
  EXPECT_EQ(s.next_job().kind, JobKind::kWait);
  s.report(0, 0, 1.0);
  s.report_failure(1, 0);
  s.report(2, 0, 3.0);
  EXPECT_EQ(s.next_job().kind, JobKind::kDone);
  EXPECT_THROW(RandomSearchScheduler({0, 3, Objective::kMinimize}), Error);
  EXPECT_THROW(RandomSearchScheduler({3, 0, Objective::kMinimize}), Error);
}

}  // namespace
}  // namespace tune
}  // namespace chorus
