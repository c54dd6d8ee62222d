// The search's state file: round trip, atomic writes (a failed write leaves
// the previous file), and clear errors for corrupt or foreign files.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chorus/status.h"
#include "chorus/tune/asha.h"
#include "chorus/tune/state_file.h"

namespace chorus {
namespace tune {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

class StateFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/chorus_tune_state_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/search.json";
  }
  void TearDown() override { (void)std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // A log with a finished, a failed, a promoted and a running job.
  SearchLog sample_log() {
    SearchSpace space;
    space.add_log_uniform("lr", 1e-3, 1.0).add_choice("act", {"relu", "tanh"}).add_int("w", 1, 8);
    AshaScheduler sched({1, 9, 3, 0, 5, Objective::kMaximize});
    SearchHeader h;
    h.scheduler = sched.name();
    h.settings = sched.settings();
    h.space = space.to_json();
    h.seed = 18446744073709551557ULL;  // beyond a double's 53 bits
    h.max_budget = 9;
    h.groups = 2;
    SearchLog log(h);
    double t = 1700000000.25;
    std::vector<Job> jobs;
    for (int i = 0; i < 3; ++i) {
      jobs.push_back(sched.next_job());
      log.job_started(jobs.back(), space.sample(h.seed, jobs.back().trial), i % 2, t += 1);
    }
    sched.report(0, 0, 0.1);
    log.job_finished(0, 0, 0.1, 1, t += 1);
    sched.report_failure(1, 0);
    log.job_failed(1, 0, "the metric is NaN (the trial diverged)", 1, t += 1);
    sched.report(2, 0, 1.0 / 3.0);
    log.job_finished(2, 0, 1.0 / 3.0, 1, t += 1);
    const Job promote = sched.next_job();
    EXPECT_EQ(promote.kind, JobKind::kPromote);
    log.job_started(promote, space.sample(h.seed, promote.trial), 1, t += 1);
    return log;
  }

  std::string dir_, path_;
};

TEST_F(StateFileTest, RoundTripKeepsEverything) {
  const SearchLog log = sample_log();
  ASSERT_TRUE(save_state_file(path_, log).ok());
  const SearchLog back = load_state_file(path_);
  EXPECT_EQ(back.to_json(), log.to_json());
  EXPECT_EQ(back.header().seed, 18446744073709551557ULL);
  EXPECT_EQ(back.trial(2)->rungs[0].metric, 1.0 / 3.0);
  ASSERT_EQ(back.pending_jobs().size(), 1u);
  EXPECT_EQ(back.pending_jobs()[0].trial, 2);
  EXPECT_EQ(back.pending_jobs()[0].rung, 1);
  EXPECT_EQ(back.trial(1)->state, TrialState::kFailed);
  EXPECT_EQ(back.trial(1)->rungs[0].error, "the metric is NaN (the trial diverged)");
  // Replaying the events rebuilds the scheduler: its next decision is the
  // one the original would make (trial 3 starts; trial 2 is in flight).
  AshaScheduler fresh({1, 9, 3, 0, 5, Objective::kMaximize});
  back.replay_into(fresh);
  EXPECT_EQ(fresh.in_flight(), 1);
  const Job next = fresh.next_job();
  EXPECT_EQ(next.kind, JobKind::kStart);
  EXPECT_EQ(next.trial, 3);
}

TEST_F(StateFileTest, ReplayIntoAnotherSchedulerNamesTheEvent) {
  const SearchLog log = sample_log();
  AshaScheduler other({3, 9, 3, 0, 5, Objective::kMaximize});  // first rung budget 3, not 1
  try {
    log.replay_into(other);
    FAIL() << "replayed into another scheduler";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "replaying event 0 (trial 0, rung 0): the scheduler now gives trial 0, rung 0 with budget 3 (was the "
                 "file edited, or written by another version?)");
  }
}

TEST_F(StateFileTest, AFailedWriteLeavesThePreviousFile) {
  const SearchLog log = sample_log();
  ASSERT_TRUE(save_state_file(path_, log).ok());
  const std::string before = read_file(path_);

  // A write that fails halfway (the file size limit, as a full disk would).
  ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit old_limit;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct rlimit small = old_limit;
  small.rlim_cur = 64;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  Status s = save_state_file(path_, log);  // longer than the limit
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old_limit), 0);
  ::signal(SIGXFSZ, SIG_DFL);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Cannot write search state file '" + path_ + "': "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("File too large"), std::string::npos) << s.message();
  EXPECT_EQ(read_file(path_), before);
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(path_).parent_path())) {
    EXPECT_EQ(entry.path().string().find(path_ + ".tmp"), std::string::npos) << "left behind: " << entry.path();
  }
  EXPECT_EQ(load_state_file(path_).to_json(), log.to_json());
}

std::string load_error(const std::string& path) {
  try {
    load_state_file(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "loaded";
}

TEST_F(StateFileTest, CorruptOrForeignFilesAreClearErrors) {
  EXPECT_EQ(load_error(dir_ + "/missing.json"),
            "cannot read the search state file '" + dir_ + "/missing.json': No such file or directory");

  ASSERT_TRUE(save_state_file(path_, sample_log()).ok());
  const std::string good = read_file(path_);
  write_text(path_, good.substr(0, good.size() / 2));  // torn
  EXPECT_NE(load_error(path_).find("search state file '" + path_ + "' is not usable: "), std::string::npos);
  EXPECT_NE(load_error(path_).find(" at line "), std::string::npos) << load_error(path_);

  write_text(path_, "{\"trials\": []}");
  EXPECT_EQ(load_error(path_), "search state file '" + path_ +
                                   "' is not usable: it is not a chorus::tune state file (no \"format\": "
                                   "\"chorus-tune-state\")");

  std::string v2 = good;
  v2.replace(v2.find("\"version\": 1"), 12, "\"version\": 2");
  write_text(path_, v2);
  EXPECT_EQ(load_error(path_), "search state file '" + path_ +
                                   "' is not usable: its format version is 2, this build reads version 1");

  std::string bad_metric = good;
  bad_metric.replace(bad_metric.find("\"metric\": 0.1"), 13, "\"metric\": \"x\"");
  write_text(path_, bad_metric);
  EXPECT_EQ(load_error(path_), "search state file '" + path_ + "' is not usable: trial 0 metric must be a number, not a string");

  std::string bad_event = good;
  bad_event.replace(bad_event.find("[\"job\",0,0]"), 11, "[\"job\",9,0]");
  write_text(path_, bad_event);
  EXPECT_EQ(load_error(path_), "search state file '" + path_ +
                                   "' is not usable: an event names trial 9, rung 0, which the trials list lacks");
}

TEST_F(StateFileTest, EventsAreOneLineEach) {
  ASSERT_TRUE(save_state_file(path_, sample_log()).ok());
  const std::string text = read_file(path_);
  EXPECT_NE(text.find("\n  [\"job\",0,0],\n  [\"job\",1,0],\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[\"failed\",1,0]"), std::string::npos);
}

}  // namespace
}  // namespace tune
}  // namespace chorus
