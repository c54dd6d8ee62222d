#include "tune_options.h"

#include <boost/program_options.hpp>

#include <sstream>

#include "command_line.h"
#include "example_error.h"
#include "option_values.h"

namespace po = boost::program_options;

namespace tune_mnist {

using train_mnist::fail;
using train_mnist::parse_command_line;
using train_mnist::parse_integer_option;
using train_mnist::parse_unsigned_option;

ParsedTuneCommandLine parse_tune_options(const std::vector<std::string>& arguments) {
  const TuneOptions d;
  po::options_description description("Options");
  // Numbers are read as text and checked here, so a bad value gets a message
  // naming the accepted range rather than Boost's generic one.
  description.add_options()
      ("help,h", "print this help and exit")
      ("scheduler", po::value<std::string>()->default_value(d.scheduler),
       "asha (asynchronous successive halving), hyperband or random")
      ("ranks-per-trial", po::value<std::string>()->default_value("1"),
       "ranks that train one trial together (a divisor of the number of ranks)")
      ("max-budget", po::value<std::string>()->default_value("9"), "R: the full budget of a trial, in epochs (1-1000)")
      ("min-budget", po::value<std::string>()->default_value("1"), "ASHA's first rung, in epochs (1 to R)")
      ("eta", po::value<std::string>()->default_value("3"), "reduction factor: keep the best 1/eta of a rung (2-100)")
      ("trials", po::value<std::string>(),
       "configurations to try (asha: default 27; random: default 27; not for hyperband, whose brackets fix it)")
      ("seed", po::value<std::string>()->default_value("42"), "sampling of configurations, model initialisation, data order")
      ("resume", "continue the search in --state (finished jobs are not repeated)")
      ("state", po::value<std::string>()->default_value(d.state), "the search's state file, saved after every job")
      ("log", po::value<std::string>()->default_value(""), "write the search's JSON log (every trial, every rung) here")
      ("plot", po::value<std::string>()->default_value(""), "write a PNG of the metric against the budget here")
      ("checkpoint-dir", po::value<std::string>()->default_value(""),
       "where promoted trials continue from (default <state>.checkpoints; shared by every rank)")
      ("data-dir", po::value<std::string>()->default_value(d.data_dir), "the four MNIST IDX files")
      ("validation-samples", po::value<std::string>()->default_value("1000"),
       "the last N training images, held out: the search's metric is the accuracy on them")
      ("train-samples", po::value<std::string>()->default_value("0"),
       "train on the first N of the other training images (0: all of them)")
      ("threads", po::value<std::string>()->default_value("1"), "LibTorch threads per rank (1-1024)")
      ("quiet", "no progress line per job");

  const po::variables_map values = parse_command_line(arguments, description, "tune_mnist");

  ParsedTuneCommandLine out;
  if (values.count("help")) {
    std::ostringstream help;
    help << "tune_mnist: hyperparameter search (learning rate, batch size, hidden width) of the MNIST MLP\n"
            "over groups of ranks with Chorus (run it under mpirun or chorusrun; every rank takes the\n"
            "same options).\n\n"
         << description;
    out.help = help.str();
    return out;
  }
  const auto text = [&](const char* flag) { return values[flag].as<std::string>(); };
  TuneOptions o;
  o.scheduler = text("scheduler");
  if (o.scheduler != "asha" && o.scheduler != "hyperband" && o.scheduler != "random")
    train_mnist::invalid_option("scheduler", o.scheduler, "asha, hyperband or random");
  o.ranks_per_trial = static_cast<int>(parse_integer_option("ranks-per-trial", text("ranks-per-trial"), 1, 1 << 20));
  o.max_budget = parse_integer_option("max-budget", text("max-budget"), 1, 1000);
  o.min_budget = parse_integer_option("min-budget", text("min-budget"), 1, 1000);
  if (o.min_budget > o.max_budget)
    train_mnist::invalid_option("min-budget", text("min-budget"),
                                "at most --max-budget (" + std::to_string(o.max_budget) + ")");
  o.eta = parse_integer_option("eta", text("eta"), 2, 100);
  if (values.count("trials")) {
    if (o.scheduler == "hyperband")
      fail("--trials does not apply to --scheduler hyperband: its brackets fix the number of configurations "
           "from --max-budget and --eta");
    o.trials = parse_integer_option("trials", text("trials"), 1, 100000);
    o.trials_given = true;
  }
  o.seed = parse_unsigned_option("seed", text("seed"), 0, UINT64_MAX, "an integer from 0 to 2^64 - 1");
  o.resume = values.count("resume") > 0;
  o.state = text("state");
  if (o.state.empty()) train_mnist::invalid_option("state", "", "a file path");
  o.log = text("log");
  o.plot = text("plot");
  o.checkpoint_dir = text("checkpoint-dir");
  if (o.checkpoint_dir.empty()) o.checkpoint_dir = o.state + ".checkpoints";
  o.data_dir = text("data-dir");
  o.validation_samples = parse_integer_option("validation-samples", text("validation-samples"), 1, 1000000);
  o.train_samples = parse_integer_option("train-samples", text("train-samples"), 0, 10000000);
  o.threads = static_cast<int>(parse_integer_option("threads", text("threads"), 1, 1024));
  o.quiet = values.count("quiet") > 0;
  out.options = o;
  return out;
}

}  // namespace tune_mnist
