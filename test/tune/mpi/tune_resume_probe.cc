// The search over process sets, killed and resumed (run by
// run_tune_resume_test.sh under mpirun):
//   tune_resume_probe run <state> <journal> <kill-trial> [resume]
//     an ASHA search (R 4, eta 2, 8 trials) over groups of size/2 ranks, or
//     of 1 at np 2; each group's leader appends "done <trial> <rung>" to
//     <journal> when a job's training ends. Without "resume", the last rank of
//     the group that begins trial <kill-trial> raises SIGKILL: the job dies.
//   tune_resume_probe check <killed-state> <final-state> <journal-1> <journal-2>
//     (no MPI) checks, from the files alone, that the resumed search kept
//     every result of the killed one, re-ran only the jobs cut off by the
//     kill, never re-ran a finished one, and finished every trial.
// Prints "TUNE_RESUME_CHECK ok" or the first problem, exit 0 or 1.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "chorus/chorus.h"
#include "chorus/tune/asha.h"
#include "chorus/tune/distributed_search.h"
#include "chorus/tune/state_file.h"

namespace {

using namespace chorus::tune;

constexpr int64_t kTrials = 8;

SearchSpace space() {
  SearchSpace s;
  s.add_uniform("x", 0.0, 1.0).add_choice("w", {int64_t{1}, int64_t{2}, int64_t{3}});
  return s;
}

AshaOptions asha() {
  AshaOptions o;
  o.max_budget = 4;
  o.eta = 2;
  o.max_trials = kTrials;
  return o;
}

void append_line(const std::string& path, const std::string& line) {
  // O_APPEND: one write() per line, so lines of different leaders never mix.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    throw std::runtime_error("cannot append to " + path);
  ::close(fd);
}

int run(const std::string& state, const std::string& journal, int64_t kill_trial, bool resume) {
  chorus::init();
  const int k = chorus::size() >= 4 ? chorus::size() / 2 : 1;
  const auto trial = [&](TrialContext& ctx) {
    const bool last_of_group = chorus::process_set_rank(ctx.process_set) == chorus::process_set_size(ctx.process_set) - 1;
    if (!resume && ctx.trial == kill_trial && last_of_group) ::raise(SIGKILL);
    for (int64_t step = ctx.previous_budget; step < ctx.budget; ++step) {
      double v = 1;
      chorus::AllreduceOptions options;
      options.process_set = ctx.process_set;
      chorus::allreduce("step", chorus::Tensor(&v, chorus::DataType::kFloat64, {1}), options);
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
    }
    if (chorus::process_set_rank(ctx.process_set) == 0)
      append_line(journal, "done " + std::to_string(ctx.trial) + " " + std::to_string(ctx.rung) + "\n");
    return ctx.hyperparameters().get_double("x") * static_cast<double>(ctx.budget);
  };
  AshaScheduler scheduler(asha());
  SearchOptions options;
  options.seed = 99;
  options.state_path = state;
  options.resume = resume;
  if (chorus::rank() == 0) options.progress = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
  run_distributed_search(space(), scheduler, trial, k, options);
  chorus::shutdown();
  return 0;
}

std::multiset<std::pair<int64_t, int>> read_journal(const std::string& path) {
  std::multiset<std::pair<int64_t, int>> done;
  std::ifstream in(path);
  std::string word;
  int64_t t;
  int r;
  while (in >> word >> t >> r) done.insert({t, r});
  return done;
}

int check(const std::string& killed_path, const std::string& final_path, const std::string& journal1,
          const std::string& journal2) {
  const auto fail = [](const std::string& why) {
    std::printf("TUNE_RESUME_CHECK failed: %s\n", why.c_str());
    return 1;
  };
  const SearchLog killed = load_state_file(killed_path);
  const SearchLog final_log = load_state_file(final_path);
  const auto first_run = read_journal(journal1);
  const auto second_run = read_journal(journal2);
  std::set<std::pair<int64_t, int>> pending;
  for (const Job& j : killed.pending_jobs()) pending.insert({j.trial, j.rung});
  if (pending.empty()) return fail("the killed search's state has no job in flight");
  if (killed.reports() == 0) return fail("the search was killed before any result: nothing to keep");
  if (final_log.trials().size() != static_cast<size_t>(kTrials))
    return fail("the resumed search has " + std::to_string(final_log.trials().size()) + " trials, expected 8");
  std::set<std::pair<int64_t, int>> finished_before;
  for (const TrialRecord& t : killed.trials())
    for (const RungRecord& r : t.rungs)
      if (r.finished) finished_before.insert({t.id, r.rung});
  for (const TrialRecord& t : final_log.trials()) {
    const std::string name = "trial " + std::to_string(t.id);
    if (t.state != TrialState::kCompleted && t.state != TrialState::kStopped)
      return fail(name + " ended " + trial_state_name(t.state));
    for (const RungRecord& r : t.rungs) {
      const std::pair<int64_t, int> key{t.id, r.rung};
      const std::string job = name + " rung " + std::to_string(r.rung);
      if (!r.finished || r.failed) return fail(job + " did not finish");
      if (r.metric != t.config.get_double("x") * static_cast<double>(r.budget))
        return fail(job + "'s metric is not its configuration's");
      if (finished_before.count(key)) {
        const TrialRecord* before = killed.trial(t.id);
        if (before->rungs.at(static_cast<size_t>(r.rung)).metric != r.metric) return fail(job + "'s result changed");
        if (r.attempts != 1) return fail(job + " finished before the kill but has " + std::to_string(r.attempts) + " attempts");
        if (second_run.count(key)) return fail(job + " finished before the kill and ran again after it");
        if (first_run.count(key) != 1) return fail(job + " is not in the first run's journal once");
      } else if (pending.count(key)) {
        if (r.attempts != 2) return fail(job + " was cut off by the kill but has " + std::to_string(r.attempts) + " attempts");
        if (second_run.count(key) != 1) return fail(job + " was cut off by the kill and was not re-run once");
      } else {
        if (first_run.count(key)) return fail(job + " ran before the kill but the state does not show it");
        if (second_run.count(key) != 1) return fail(job + " ran " + std::to_string(second_run.count(key)) + " times after the resume");
      }
    }
  }
  std::printf("TUNE_RESUME_CHECK ok: %lld results kept, %zu jobs re-run, %lld results in all\n",
              static_cast<long long>(killed.reports()), pending.size(), static_cast<long long>(final_log.reports()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "run" && (argc == 5 || argc == 6))
      return run(argv[2], argv[3], std::atoll(argv[4]), argc == 6 && std::string(argv[5]) == "resume");
    if (mode == "check" && argc == 6) return check(argv[2], argv[3], argv[4], argv[5]);
    std::fprintf(stderr, "usage: tune_resume_probe run <state> <journal> <kill-trial> [resume]\n"
                         "       tune_resume_probe check <killed> <final> <journal-1> <journal-2>\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_resume_probe: %s\n", e.what());
    return 1;
  }
}
