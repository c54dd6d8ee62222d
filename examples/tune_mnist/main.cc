// tune_mnist: hyperparameter search of the MNIST MLP over groups of ranks
// (chorus::tune, docs/TUNE.md): learning rate (log-uniform), batch size and
// hidden width (choices), with ASHA, Hyperband or random search.
//
//   scripts/prepare_mnist.sh
//   mpirun -np 4 build/examples/tune_mnist/tune_mnist --ranks-per-trial 2 --plot tune.png
//
// Every rank runs this program with the same options. At the end rank 0
// prints the summary table (best first), the compute spent against a grid
// of the same configurations at the full budget, and the best trial's test
// accuracy; --log and --plot write the JSON log and the PNG.
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/utils.h>

#include "chorus/atomic_file.h"
#include "chorus/chorus.h"
#include "chorus/torch.h"
#include "chorus/tune/asha.h"
#include "chorus/tune/distributed_search.h"
#include "chorus/tune/hyperband.h"
#include "chorus/tune/process_set_groups.h"
#include "chorus/tune/random_search.h"
#include "chorus/tune/search_plot.h"
#include "chorus/tune/search_summary.h"
#include "chorus/tune/state_file.h"
#include "example_start.h"
#include "mnist_trial.h"
#include "tune_options.h"

namespace {

using namespace chorus::tune;
using tune_mnist::TuneOptions;

SearchSpace mnist_space() {
  SearchSpace space;
  space.add_log_uniform("lr", 1e-4, 3e-2)
      .add_choice("batch_size", {int64_t{32}, int64_t{64}, int64_t{128}, int64_t{256}})
      .add_choice("hidden", {int64_t{32}, int64_t{64}, int64_t{128}, int64_t{256}});
  return space;
}

std::unique_ptr<Scheduler> make_scheduler(const TuneOptions& o) {
  if (o.scheduler == "hyperband") {
    HyperbandOptions h;
    h.max_budget = o.max_budget;
    h.eta = o.eta;
    return std::make_unique<HyperbandScheduler>(h);
  }
  if (o.scheduler == "random") {
    RandomSearchOptions r;
    r.max_budget = o.max_budget;
    r.trials = o.trials;
    return std::make_unique<RandomSearchScheduler>(r);
  }
  AshaOptions a;
  a.min_budget = o.min_budget;
  a.max_budget = o.max_budget;
  a.eta = o.eta;
  a.max_trials = o.trials;
  return std::make_unique<AshaScheduler>(a);
}

// Rank 0: the table, the files, the compute. Returns the best trial (or
// null) for the test evaluation every rank then takes part in.
const TrialRecord* report(const SearchLog& log, const TuneOptions& o) {
  std::printf("\n%s\n", summary_table(log).c_str());
  int64_t used = 0;
  for (const TrialRecord& t : log.trials()) used += t.budget_used();
  const int64_t grid = static_cast<int64_t>(log.trials().size()) * log.header().max_budget;
  std::printf("compute: %lld epochs trained; a grid of these %zu configurations at the full budget (%lld epochs "
              "each) is %lld epochs: %.1f%%\n",
              static_cast<long long>(used), log.trials().size(), static_cast<long long>(log.header().max_budget),
              static_cast<long long>(grid), grid > 0 ? 100.0 * static_cast<double>(used) / static_cast<double>(grid) : 0.0);
  if (!o.log.empty()) {
    chorus::write_file_atomically(o.log, state_file_text(log), "state file");
    std::printf("log: %s\n", o.log.c_str());
  }
  if (!o.plot.empty()) {
    const chorus::Status s = write_search_plot(log, o.plot, "tune_mnist: " + o.scheduler);
    if (s.ok())
      std::printf("plot: %s\n", o.plot.c_str());
    else
      std::fprintf(stderr, "tune_mnist: warning: %s\n", s.message().c_str());
  }
  return best_trial(log);
}

// `rank` is read before anything can fail: chorus::rank() would throw once
// another rank shut down after the same error, hiding this rank's own.
int run(const TuneOptions& o, int rank) {
  torch::set_num_threads(o.threads);
  const tune_mnist::TuneData data = tune_mnist::load_tune_data(o.data_dir, o.validation_samples, o.train_samples);
  const SearchSpace space = mnist_space();
  std::unique_ptr<Scheduler> scheduler = make_scheduler(o);
  const tune_mnist::MnistTrial trial(data, o.checkpoint_dir, o.seed);
  SearchOptions options;
  options.seed = o.seed;
  options.state_path = o.state;
  options.resume = o.resume;
  if (rank == 0 && !o.quiet)
    options.progress = [](const std::string& line) { std::printf("%s\n", line.c_str()), std::fflush(stdout); };
  const std::optional<SearchLog> log = run_distributed_search(
      space, *scheduler, [&trial](TrialContext& ctx) { return trial(ctx); }, o.ranks_per_trial, options);

  // The best trial's test accuracy after its budget: every rank evaluates a
  // share of the test set with the trial's last checkpoint.
  int64_t best = -1, budget = 0;
  double validation = 0;
  if (rank == 0) {
    const TrialRecord* t = report(*log, o);
    if (t && t->last_result()) best = t->id, budget = t->last_result()->budget, validation = t->last_result()->metric;
  }
  best = chorus::torch::broadcast_scalar(best, 0, "tune_mnist.best");
  budget = chorus::torch::broadcast_scalar(budget, 0, "tune_mnist.best_budget");
  if (best < 0) {
    if (rank == 0) std::printf("no trial finished: nothing to evaluate\n");
    return 1;
  }
  const Config config = space.sample(o.seed, best);
  auto model = tune_mnist::load_trained_model(o.checkpoint_dir, best, budget, config.get_int("hidden"));
  const double test = tune_mnist::accuracy(*model, data.test, chorus::ProcessSet::global(), "tune_mnist.test");
  if (rank == 0)
    std::printf("best: trial %lld (%s) after %lld epochs: validation accuracy %.4f, test accuracy %.4f\n",
                static_cast<long long>(best), config.to_string().c_str(), static_cast<long long>(budget), validation,
                test);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  TuneOptions options;
  if (const std::optional<int> exit_status =
          train_mnist::start_example("tune_mnist", argc, argv, tune_mnist::parse_tune_options, &options)) {
    return *exit_status;
  }
  // Read now: once a rank has shut down after an error, chorus::rank() and
  // chorus::size() throw on the others, hiding their own (clearer) error.
  // For the same reason the group layout is checked here, before any
  // collective, against the size read here.
  const int rank = chorus::rank();
  const int size = chorus::size();
  int status = 0;
  try {
    (void)chorus::tune::GroupLayout::make(size, options.ranks_per_trial);
    status = run(options, rank);
  } catch (const std::exception& e) {
    // Every rank gets the same error from the search (rank 0's); say it once.
    if (rank == 0) std::fprintf(stderr, "tune_mnist: error: %s\n", e.what());
    status = 1;
  }
  try {
    chorus::shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_mnist: rank %d: error in shutdown: %s\n", rank, e.what());
    status = 1;
  }
  return status;
}
