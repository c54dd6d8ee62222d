// The search end to end in one process: the driver, the schedulers, the
// state file and ThreadGroups. Groups train at the same time; a failing
// trial does not stop the search; a stopped or killed search resumes
// without repeating finished work; a seed gives the same configurations.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>
#include <stdexcept>

#include "chorus/status.h"
#include "chorus/tune/asha.h"
#include "chorus/tune/hyperband.h"
#include "chorus/tune/random_search.h"
#include "chorus/tune/search_driver.h"
#include "chorus/tune/search_plot.h"
#include "chorus/tune/search_summary.h"
#include "chorus/tune/state_file.h"
#include "chorus/tune/thread_groups.h"

namespace chorus {
namespace tune {
namespace {

SearchSpace test_space() {
  SearchSpace space;
  space.add_log_uniform("lr", 1e-4, 1.0).add_int("width", 8, 256, true).add_choice("act", {"relu", "tanh"});
  return space;
}

// A made-up "accuracy": best at lr = 0.01, better with width, rising with
// the budget; a function of the configuration and budget only.
double synthetic_accuracy(const Config& c, int64_t budget) {
  const double quality = 1.0 - std::fabs(std::log10(c.get_double("lr")) + 2.0) / 4.0 +
                         0.05 * std::log2(static_cast<double>(c.get_int("width"))) / 8.0 +
                         (c.get_string("act") == "relu" ? 0.01 : 0.0);
  return quality * (1.0 - std::pow(0.5, static_cast<double>(budget) / 3.0));
}

// Every (trial, rung) the trial function ran, thread-safe.
struct Calls {
  std::mutex mu;
  std::multiset<std::pair<int64_t, int>> jobs;
  void add(const TrialContext& ctx) {
    std::lock_guard<std::mutex> lock(mu);
    jobs.insert({ctx.trial, ctx.rung});
  }
};

class SearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/chorus_tune_search_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    state_ = dir_ + "/search.json";
  }
  void TearDown() override { (void)std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_, state_;
};

// The (trial, rung, metric-or-failed) results, in the order of the log.
std::vector<std::string> results_of(const SearchLog& log) {
  std::vector<std::string> out;
  for (const TrialRecord& t : log.trials())
    for (const RungRecord& r : t.rungs)
      out.push_back(std::to_string(t.id) + "/" + std::to_string(r.rung) + "=" +
                    (!r.finished ? "running" : r.failed ? "failed" : std::to_string(r.metric)));
  return out;
}

TEST_F(SearchTest, GroupsTrainAtTheSameTime) {
  constexpr int kGroups = 3;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  bool all_met = true;
  TrialFunction fn = [&](TrialContext& ctx) {
    if (ctx.rung == 0 && ctx.trial < kGroups) {
      // The first jobs meet: each returns only once all are running at once.
      std::unique_lock<std::mutex> lock(mu);
      ++arrived;
      cv.notify_all();
      if (!cv.wait_for(lock, std::chrono::seconds(60), [&] { return arrived == kGroups; })) all_met = false;
    }
    return synthetic_accuracy(ctx.hyperparameters(), ctx.budget);
  };
  AshaScheduler sched({1, 9, 3, 0, 12, Objective::kMaximize});
  ThreadGroups groups(kGroups, fn);
  SearchOptions opt;
  opt.seed = 3;
  opt.state_path = state_;
  const SearchLog log = run_search(test_space(), sched, groups, opt);
  EXPECT_TRUE(all_met) << "the first " << kGroups << " jobs never ran together";
  // The log shows it: the first jobs' time spans overlap, on distinct groups.
  double latest_start = 0, earliest_end = 1e300;
  std::set<int> used_groups;
  for (int64_t t = 0; t < kGroups; ++t) {
    const RungRecord& r = log.trial(t)->rungs.at(0);
    latest_start = std::max(latest_start, r.start_time);
    earliest_end = std::min(earliest_end, r.end_time);
    used_groups.insert(r.group);
  }
  EXPECT_LT(latest_start, earliest_end);
  EXPECT_EQ(used_groups.size(), static_cast<size_t>(kGroups));
  EXPECT_EQ(log.trials().size(), 12u);
  // The file on disk is the final log.
  EXPECT_EQ(load_state_file(state_).to_json(), log.to_json());
}

TEST_F(SearchTest, AFailingTrialDoesNotStopTheSearch) {
  TrialFunction fn = [&](TrialContext& ctx) -> double {
    if (ctx.trial == 2) throw std::runtime_error("out of memory in trial 2");
    if (ctx.trial == 4) return std::nan("");
    return synthetic_accuracy(ctx.hyperparameters(), ctx.budget);
  };
  HyperbandScheduler sched({9, 3, Objective::kMaximize});
  ThreadGroups groups(2, fn);
  SearchOptions opt;
  opt.seed = 1;
  const SearchLog log = run_search(test_space(), sched, groups, opt);
  // Every configuration of every bracket ran: 9 + 5 + 3.
  EXPECT_EQ(log.trials().size(), 17u);
  EXPECT_EQ(log.trial(2)->state, TrialState::kFailed);
  EXPECT_EQ(log.trial(2)->rungs[0].error, "the trial threw: out of memory in trial 2");
  EXPECT_EQ(log.trial(4)->state, TrialState::kFailed);
  EXPECT_EQ(log.trial(4)->rungs[0].error, "the metric is NaN (the trial diverged)");
  int completed = 0;
  for (const TrialRecord& t : log.trials()) {
    completed += t.state == TrialState::kCompleted;
    EXPECT_NE(t.state, TrialState::kRunning);
    EXPECT_NE(t.state, TrialState::kPaused) << "paused trials end as stopped";
  }
  EXPECT_EQ(completed, 1 + 1 + 3) << "one survivor per bracket s=2, s=1, and all 3 of s=0";
  const TrialRecord* best = best_trial(log);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->state, TrialState::kCompleted);
}

// A search stopped after k results and resumed ends with the same log as one
// that ran through (one group: the order of events is fixed), and never runs
// a finished job again.
TEST_F(SearchTest, ResumeContinuesWithoutRepeatingFinishedWork) {
  for (int stop_at : {1, 5, 11, 16}) {
    SCOPED_TRACE("stopped after " + std::to_string(stop_at) + " results");
    Calls reference_calls;
    TrialFunction reference_fn = [&](TrialContext& ctx) {
      reference_calls.add(ctx);
      return synthetic_accuracy(ctx.hyperparameters(), ctx.budget);
    };
    HyperbandScheduler reference_sched({9, 3, Objective::kMaximize});
    ThreadGroups reference_groups(1, reference_fn);
    SearchOptions opt;
    opt.seed = 9;
    const SearchLog reference = run_search(test_space(), reference_sched, reference_groups, opt);

    (void)std::remove(state_.c_str());
    Calls calls;
    TrialFunction fn = [&](TrialContext& ctx) {
      calls.add(ctx);
      return synthetic_accuracy(ctx.hyperparameters(), ctx.budget);
    };
    opt.state_path = state_;
    opt.stop_after_reports = stop_at;
    {
      HyperbandScheduler sched({9, 3, Objective::kMaximize});
      ThreadGroups groups(1, fn);
      const SearchLog part = run_search(test_space(), sched, groups, opt);
      EXPECT_EQ(part.reports(), stop_at);
    }
    opt.stop_after_reports = 0;
    opt.resume = true;
    HyperbandScheduler sched({9, 3, Objective::kMaximize});
    ThreadGroups groups(1, fn);
    const SearchLog resumed = run_search(test_space(), sched, groups, opt);
    EXPECT_EQ(results_of(resumed), results_of(reference));
    EXPECT_EQ(resumed.to_json().at("events"), reference.to_json().at("events"));
    EXPECT_EQ(calls.jobs, reference_calls.jobs) << "a job ran twice, or one was missed";
  }
}

// Several groups: jobs in flight at the stop run again; finished ones never.
TEST_F(SearchTest, ResumeWithGroupsReRunsOnlyTheJobsInFlight) {
  Calls first_calls, second_calls;
  Calls* calls = &first_calls;
  TrialFunction fn = [&](TrialContext& ctx) {
    calls->add(ctx);
    return synthetic_accuracy(ctx.hyperparameters(), ctx.budget);
  };
  SearchOptions opt;
  opt.seed = 4;
  opt.state_path = state_;
  opt.stop_after_reports = 10;
  {
    AshaScheduler sched({1, 27, 3, 0, 20, Objective::kMaximize});
    ThreadGroups groups(3, fn);
    run_search(test_space(), sched, groups, opt);
  }
  const SearchLog stopped = load_state_file(state_);
  std::set<std::pair<int64_t, int>> finished, pending;
  for (const TrialRecord& t : stopped.trials())
    for (const RungRecord& r : t.rungs) (r.finished ? finished : pending).insert({t.id, r.rung});
  EXPECT_EQ(finished.size(), 10u);
  // The 10th report freed one group; the other two were busy.
  EXPECT_EQ(pending.size(), 2u);

  calls = &second_calls;
  opt.stop_after_reports = 0;
  opt.resume = true;
  AshaScheduler sched({1, 27, 3, 0, 20, Objective::kMaximize});
  ThreadGroups groups(3, fn);
  const SearchLog resumed = run_search(test_space(), sched, groups, opt);
  for (const auto& job : second_calls.jobs) EXPECT_EQ(finished.count(job), 0u) << "trial " << job.first << " rung " << job.second << " ran again";
  for (const auto& job : pending) {
    EXPECT_EQ(second_calls.jobs.count(job), 1u) << "pending trial " << job.first << " rung " << job.second << " not re-run";
    EXPECT_EQ(resumed.trial(job.first)->rungs.at(static_cast<size_t>(job.second)).attempts, 2);
  }
  EXPECT_EQ(resumed.trials().size(), 20u);
  for (const TrialRecord& t : resumed.trials())
    for (const RungRecord& r : t.rungs) EXPECT_TRUE(r.finished);
}

// A real kill: a child process runs the search and is killed with SIGKILL
// after some results; the state file it leaves loads, and the search resumes.
TEST_F(SearchTest, KilledSearchResumes) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    TrialFunction fn = [](TrialContext& ctx) {
      ::usleep(20000);  // slow enough that the kill lands mid-search
      return synthetic_accuracy(ctx.hyperparameters(), ctx.budget);
    };
    AshaScheduler sched({1, 9, 3, 0, 30, Objective::kMaximize});
    ThreadGroups groups(2, fn);
    SearchOptions opt;
    opt.seed = 5;
    opt.state_path = state_;
    opt.progress = [&](const std::string& line) {
      if (line.find(": ") != std::string::npos && line.rfind("trial ", 0) == 0) (void)!::write(pipe_fds[1], "r", 1);
    };
    run_search(test_space(), sched, groups, opt);
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  char c;
  int results = 0;
  while (results < 6 && ::read(pipe_fds[0], &c, 1) == 1) ++results;
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(pipe_fds[0]);
  ASSERT_EQ(results, 6) << "the child search ended before 6 results";
  ASSERT_TRUE(WIFSIGNALED(status));

  const SearchLog killed = load_state_file(state_);
  EXPECT_GE(killed.reports(), 6);
  std::set<std::pair<int64_t, int>> finished;
  for (const TrialRecord& t : killed.trials())
    for (const RungRecord& r : t.rungs)
      if (r.finished) finished.insert({t.id, r.rung});

  Calls calls;
  TrialFunction fn = [&](TrialContext& ctx) {
    calls.add(ctx);
    return synthetic_accuracy(ctx.hyperparameters(), ctx.budget);
  };
  AshaScheduler sched({1, 9, 3, 0, 30, Objective::kMaximize});
  ThreadGroups groups(2, fn);
  SearchOptions opt;
  opt.seed = 5;
  opt.state_path = state_;
  opt.resume = true;
  const SearchLog resumed = run_search(test_space(), sched, groups, opt);
  for (const auto& job : calls.jobs) EXPECT_EQ(finished.count(job), 0u) << "trial " << job.first << " rung " << job.second << " ran again";
  EXPECT_EQ(resumed.trials().size(), 30u);
  for (const TrialRecord& t : resumed.trials()) {
    EXPECT_EQ(t.config.to_json(), test_space().sample(5, t.id).to_json());
    for (const RungRecord& r : t.rungs) EXPECT_TRUE(r.finished);
  }
}

TEST_F(SearchTest, SameSeedSameConfigurations) {
  const auto configs = [](uint64_t seed) {
    TrialFunction fn = [](TrialContext& ctx) { return synthetic_accuracy(ctx.hyperparameters(), ctx.budget); };
    RandomSearchScheduler sched({3, 8, Objective::kMaximize});
    ThreadGroups groups(3, fn);
    SearchOptions opt;
    opt.seed = seed;
    const SearchLog log = run_search(test_space(), sched, groups, opt);
    std::vector<std::string> out;
    for (const TrialRecord& t : log.trials()) out.push_back(t.config.to_json().dump());
    return out;
  };
  const auto a = configs(77);
  EXPECT_EQ(a.size(), 8u);
  EXPECT_EQ(configs(77), a);
  EXPECT_NE(configs(78), a);
}

std::string search_error(const SearchOptions& opt, Scheduler& sched, const SearchSpace& space) {
  TrialFunction fn = [](TrialContext& ctx) { return synthetic_accuracy(ctx.hyperparameters(), ctx.budget); };
  ThreadGroups groups(1, fn);
  try {
    run_search(space, sched, groups, opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "ran";
}

TEST_F(SearchTest, StateFileOfAnotherSearchIsAClearError) {
  SearchOptions opt;
  opt.seed = 2;
  opt.state_path = state_;
  opt.stop_after_reports = 3;
  {
    AshaScheduler sched({1, 9, 3, 0, 6, Objective::kMaximize});
    EXPECT_EQ(search_error(opt, sched, test_space()), "ran");
  }
  opt.stop_after_reports = 0;
  {
    AshaScheduler sched({1, 9, 3, 0, 6, Objective::kMaximize});
    EXPECT_EQ(search_error(opt, sched, test_space()),
              "the search state file '" + state_ + "' exists: resume the search in it (--resume) or remove it");
  }
  opt.resume = true;
  {
    HyperbandScheduler sched({9, 3, Objective::kMaximize});
    EXPECT_EQ(search_error(opt, sched, test_space()),
              "search state file '" + state_ + "' belongs to another search: its scheduler is 'asha', this search's is 'hyperband'");
  }
  {
    AshaScheduler sched({1, 9, 3, 0, 7, Objective::kMaximize});
    EXPECT_NE(search_error(opt, sched, test_space()).find("belongs to another search: its scheduler settings are "),
              std::string::npos);
  }
  {
    AshaScheduler sched({1, 9, 3, 0, 6, Objective::kMaximize});
    opt.seed = 3;
    EXPECT_EQ(search_error(opt, sched, test_space()),
              "search state file '" + state_ + "' belongs to another search: its seed is 2, this search's is 3");
    opt.seed = 2;
  }
  {
    AshaScheduler sched({1, 9, 3, 0, 6, Objective::kMaximize});
    SearchSpace other = test_space();
    other.add_uniform("dropout", 0, 0.5);
    EXPECT_NE(search_error(opt, sched, other).find("belongs to another search: its search space is "), std::string::npos);
  }
  {
    // An edited result changes what the scheduler decides next.
    std::ifstream in(state_);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = text.find("[\"job\",1,0]");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 11, "[\"job\",1,1]");
    std::ofstream(state_) << text;
    AshaScheduler sched({1, 9, 3, 0, 6, Objective::kMaximize});
    EXPECT_NE(search_error(opt, sched, test_space()).find("is not usable: an event names trial 1, rung 1"), std::string::npos);
  }
  {
    SearchSpace empty;
    AshaScheduler sched({1, 9, 3, 0, 6, Objective::kMaximize});
    EXPECT_EQ(search_error(SearchOptions{}, sched, empty), "the search space has no hyperparameters");
  }
}

TEST_F(SearchTest, SummaryTableAndPlot) {
  TrialFunction fn = [](TrialContext& ctx) -> double {
    if (ctx.trial == 1) return std::nan("");
    return synthetic_accuracy(ctx.hyperparameters(), ctx.budget);
  };
  HyperbandScheduler sched({9, 3, Objective::kMaximize});
  ThreadGroups groups(2, fn);
  SearchOptions opt;
  opt.seed = 12;
  const SearchLog log = run_search(test_space(), sched, groups, opt);
  const std::string table = summary_table(log);
  // Header, then the best trial: the one of highest accuracy at the full budget.
  const TrialRecord* best = nullptr;
  for (const TrialRecord& t : log.trials()) {
    const RungRecord* r = t.last_result();
    if (r != nullptr && r->budget == 9 && (best == nullptr || r->metric > best->last_result()->metric)) best = &t;
  }
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best_trial(log), best);
  const size_t first_newline = table.find('\n');
  EXPECT_EQ(table.substr(0, first_newline).rfind("rank  trial  metric (maximize)  budget  used  state      group  lr", 0), 0u)
      << table;
  const std::string first_row = table.substr(first_newline + 1, table.find('\n', first_newline + 1) - first_newline - 1);
  EXPECT_EQ(first_row.rfind("1     " + std::to_string(best->id) + " ", 0), 0u) << table;
  EXPECT_NE(table.find("failed"), std::string::npos);
  EXPECT_NE(table.find("17 trials, "), std::string::npos) << table;
  const std::string top3 = summary_table(log, 3);
  EXPECT_NE(top3.find("\n(14 more trials in the state file)\n17 trials, "), std::string::npos) << top3;
  EXPECT_EQ(std::count(top3.begin(), top3.end(), '\n'), 6) << top3;

  const std::string png = dir_ + "/search.png";
  const Status s = write_search_plot(log, png);
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    ASSERT_TRUE(s.ok()) << s.message();
    std::ifstream in(png, std::ios::binary);
    char magic[8] = {};
    in.read(magic, 8);
    EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  } else {
    EXPECT_NE(s.message().find("gnuplot is not installed"), std::string::npos) << s.message();
  }
  std::ifstream script(dir_ + "/search.gp");
  EXPECT_TRUE(script.good()) << "the gnuplot script is kept beside the PNG";
}

}  // namespace
}  // namespace tune
}  // namespace chorus
