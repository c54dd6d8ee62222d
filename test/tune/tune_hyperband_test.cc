// Hyperband's brackets against the paper's formulas written out here in
// floating point (Li et al. 2018, Algorithm 1), and its scheduling.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "chorus/status.h"
#include "chorus/tune/hyperband.h"

namespace chorus {
namespace tune {
namespace {

struct ExpectedRung {
  long long n, r;
};

// Algorithm 1, directly: s_max = floor(log_eta R), B = (s_max+1) R,
// n = ceil(B/R eta^s/(s+1)), r = R eta^-s, n_i = floor(n eta^-i),
// r_i = r eta^i (rounded down to whole units, as documented). The 1e-9 keeps
// exact powers exact where doubles land a hair below them.
std::vector<std::vector<ExpectedRung>> paper_brackets(double R, double eta) {
  const int s_max = static_cast<int>(std::floor(std::log(R) / std::log(eta) + 1e-9));
  const double B = (s_max + 1) * R;
  std::vector<std::vector<ExpectedRung>> out;
  for (int s = s_max; s >= 0; --s) {
    const double n = std::ceil(B / R * std::pow(eta, s) / (s + 1) - 1e-9);
    const double r = R * std::pow(eta, -s);
    std::vector<ExpectedRung> rungs;
    for (int i = 0; i <= s; ++i) {
      rungs.push_back({static_cast<long long>(std::floor(n * std::pow(eta, -i) + 1e-9)),
                       static_cast<long long>(std::floor(r * std::pow(eta, i) + 1e-9))});
    }
    out.push_back(rungs);
  }
  return out;
}

class HyperbandBracketsTest : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(HyperbandBracketsTest, MatchThePapersFormulas) {
  const auto [R, eta] = GetParam();
  const auto expected = paper_brackets(R, eta);
  const auto brackets = hyperband_brackets(R, eta);
  ASSERT_EQ(brackets.size(), expected.size()) << "R=" << R << " eta=" << eta;
  for (size_t b = 0; b < brackets.size(); ++b) {
    EXPECT_EQ(brackets[b].s, static_cast<int>(expected.size() - 1 - b));
    ASSERT_EQ(brackets[b].rungs.size(), expected[b].size());
    for (size_t i = 0; i < expected[b].size(); ++i) {
      EXPECT_EQ(brackets[b].rungs[i].configurations, expected[b][i].n) << "bracket s=" << brackets[b].s << " rung " << i;
      EXPECT_EQ(brackets[b].rungs[i].budget, expected[b][i].r) << "bracket s=" << brackets[b].s << " rung " << i;
    }
    EXPECT_EQ(brackets[b].rungs.back().budget, R) << "every bracket ends at R";
  }
}

INSTANTIATE_TEST_SUITE_P(SeveralBudgets, HyperbandBracketsTest,
                         ::testing::Values(std::make_pair(81, 3), std::make_pair(27, 3), std::make_pair(16, 2),
                                           std::make_pair(9, 3), std::make_pair(100, 4), std::make_pair(243, 3),
                                           std::make_pair(1000, 10), std::make_pair(2, 3), std::make_pair(1, 2)));

// The table in the paper (Section 3.3, R = 81, eta = 3), as printed there.
TEST(HyperbandBrackets, PapersTableForR81Eta3) {
  const std::vector<std::vector<ExpectedRung>> table = {
      {{81, 1}, {27, 3}, {9, 9}, {3, 27}, {1, 81}},
      {{34, 3}, {11, 9}, {3, 27}, {1, 81}},
      {{15, 9}, {5, 27}, {1, 81}},
      {{8, 27}, {2, 81}},
      {{5, 81}}};
  const auto brackets = hyperband_brackets(81, 3);
  ASSERT_EQ(brackets.size(), table.size());
  for (size_t b = 0; b < table.size(); ++b)
    for (size_t i = 0; i < table[b].size(); ++i) {
      EXPECT_EQ(brackets[b].rungs[i].configurations, table[b][i].n);
      EXPECT_EQ(brackets[b].rungs[i].budget, table[b][i].r);
    }
}

// Doubles put log(243)/log(3) at 4.999999999999999: the library must not.
TEST(HyperbandBrackets, ExactPowersGiveTheFullNumberOfBrackets) {
  EXPECT_EQ(hyperband_brackets(243, 3).size(), 6u);
  EXPECT_EQ(hyperband_brackets(1000, 10).size(), 4u);
  EXPECT_EQ(hyperband_brackets(242, 3).size(), 5u);
}

TEST(HyperbandBrackets, BadBudgetIsAClearError) {
  try {
    hyperband_brackets(0, 3);
    FAIL() << "R = 0 accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "Hyperband: the maximum budget R must be at least 1 unit, got 0");
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
  }
  try {
    HyperbandScheduler(HyperbandOptions{81, 1, Objective::kMaximize});
    FAIL() << "eta = 1 accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "Hyperband: the reduction factor eta must be at least 2, got 1");
  }
}

// Runs the whole search one job at a time; the metric of a trial is its id
// (maximised), so the highest ids of each rung survive. Checks every job's
// budget and the number of jobs per (bracket, rung) against the plan.
TEST(HyperbandScheduler, RunsEveryBracketWithThePlansSizesAndBudgets) {
  HyperbandScheduler sched({27, 3, Objective::kMaximize});
  const auto plan = sched.brackets();
  std::map<std::pair<int, int>, int> jobs;  // (s, rung) -> count
  std::map<int64_t, int> bracket_of;
  std::map<int64_t, int> last_rung;
  while (true) {
    Job job = sched.next_job();
    if (job.kind == JobKind::kDone) break;
    ASSERT_TRUE(job.runs()) << "one job at a time never has to wait";
    const auto& bracket = plan[plan.size() - 1 - static_cast<size_t>(job.bracket)];
    EXPECT_EQ(job.budget, bracket.rungs[static_cast<size_t>(job.rung)].budget);
    if (job.kind == JobKind::kStart) {
      EXPECT_EQ(job.rung, 0);
      EXPECT_EQ(job.previous_budget, 0);
      bracket_of[job.trial] = job.bracket;
    } else {
      EXPECT_EQ(bracket_of.at(job.trial), job.bracket);
      EXPECT_EQ(last_rung.at(job.trial), job.rung - 1);
      EXPECT_EQ(job.previous_budget, bracket.rungs[static_cast<size_t>(job.rung) - 1].budget);
    }
    last_rung[job.trial] = job.rung;
    ++jobs[std::make_pair(job.bracket, job.rung)];
    sched.report(job.trial, job.rung, static_cast<double>(job.trial));
  }
  for (const auto& bracket : plan)
    for (size_t i = 0; i < bracket.rungs.size(); ++i)
      EXPECT_EQ(jobs[std::make_pair(bracket.s, static_cast<int>(i))], bracket.rungs[i].configurations)
          << "bracket s=" << bracket.s << " rung " << i;
  EXPECT_EQ(sched.in_flight(), 0);
}

TEST(HyperbandScheduler, PromotesTheBestOfACompletedRungOnly) {
  // R = 9, eta = 3: bracket s=2 has 9 trials at 1, 3 at 3, 1 at 9.
  HyperbandScheduler sched({9, 3, Objective::kMinimize});
  std::vector<Job> first;
  for (int i = 0; i < 9; ++i) first.push_back(sched.next_job());
  // The next bracket (s=1: 5 trials at 3) fills groups while rung 0 runs.
  Job other = sched.next_job();
  EXPECT_EQ(other.kind, JobKind::kStart);
  EXPECT_EQ(other.bracket, 1);
  // Losses: trial 4 best, then 7, then 1; trial 0 failed.
  const std::map<int64_t, double> loss = {{1, 0.3}, {2, 0.9}, {3, 0.8}, {4, 0.1}, {5, 0.7},
                                          {6, 0.6}, {7, 0.2}, {8, 0.5}};
  sched.report_failure(0, 0);
  for (int64_t t = 1; t < 8; ++t) sched.report(t, 0, loss.at(t));
  // Rung 0 is not complete (trial 8 runs): no promotion yet.
  Job next = sched.next_job();
  EXPECT_EQ(next.kind, JobKind::kStart);
  EXPECT_EQ(next.bracket, 1);
  sched.report(8, 0, loss.at(8));
  std::vector<int64_t> promoted;
  for (int i = 0; i < 3; ++i) {
    Job p = sched.next_job();
    ASSERT_EQ(p.kind, JobKind::kPromote);
    EXPECT_EQ(p.rung, 1);
    EXPECT_EQ(p.budget, 3);
    EXPECT_EQ(p.previous_budget, 1);
    promoted.push_back(p.trial);
  }
  EXPECT_EQ(promoted, (std::vector<int64_t>{4, 7, 1}));
}

TEST(HyperbandScheduler, ABracketWhoseTrialsAllFailedEnds) {
  HyperbandScheduler sched({3, 3, Objective::kMaximize});  // s=1: 3 at 1 -> 1 at 3; s=0: 2 at 3
  std::vector<Job> jobs;
  while (true) {
    Job j = sched.next_job();
    if (!j.runs()) break;
    jobs.push_back(j);
  }
  ASSERT_EQ(jobs.size(), 5u);  // 3 of bracket 1, 2 of bracket 0
  for (const Job& j : jobs) sched.report_failure(j.trial, j.rung);
  EXPECT_EQ(sched.next_job().kind, JobKind::kDone);
}

TEST(HyperbandScheduler, AReportWithoutAJobIsRefused) {
  HyperbandScheduler sched({9, 3, Objective::kMaximize});
  EXPECT_THROW(sched.report(0, 0, 1.0), Error);
  Job j = sched.next_job();
  sched.report(j.trial, 0, 1.0);
  EXPECT_THROW(sched.report(j.trial, 0, 1.0), Error) << "reported twice";
}

}  // namespace
}  // namespace tune
}  // namespace chorus
