#include "train_options.h"

#include <boost/program_options.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "example_error.h"

namespace po = boost::program_options;

namespace train_mnist {
namespace {

[[noreturn]] void invalid(const std::string& flag, const std::string& value,
                          const std::string& expected) {
  fail("--" + flag + "=" + value + " is invalid: expected " + expected);
}

// Plain decimal digits only: no sign, no suffix, no spaces.
uint64_t parse_unsigned(const std::string& flag, const std::string& value, uint64_t min,
                        uint64_t max, const std::string& expected) {
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
    invalid(flag, value, expected);
  }
  errno = 0;
  const unsigned long long parsed = std::strtoull(value.c_str(), nullptr, 10);
  if (errno == ERANGE || parsed < min || parsed > max) invalid(flag, value, expected);
  return parsed;
}

int64_t parse_integer(const std::string& flag, const std::string& value, int64_t min, int64_t max) {
  const std::string expected =
      "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  return static_cast<int64_t>(parse_unsigned(flag, value, static_cast<uint64_t>(min),
                                             static_cast<uint64_t>(max), expected));
}

double parse_number(const std::string& flag, const std::string& value, bool allow_zero,
                    double max) {
  std::ostringstream expected;
  expected << "a number " << (allow_zero ? "from 0" : "above 0") << " to " << max;
  char* end = nullptr;
  errno = 0;
  const double parsed = value.empty() ? NAN : std::strtod(value.c_str(), &end);
  if (value.empty() || errno == ERANGE || *end != '\0' || !std::isfinite(parsed) ||
      parsed < 0 || (!allow_zero && parsed == 0) || parsed > max) {
    invalid(flag, value, expected.str());
  }
  return parsed;
}

std::string usage(const po::options_description& description) {
  std::ostringstream out;
  out << "train_mnist: data-parallel MNIST training with Chorus (run it under mpirun or chorusrun;\n"
         "every rank takes the same options).\n\n"
      << description;
  return out.str();
}

}  // namespace

ParsedCommandLine parse_train_options(const std::vector<std::string>& arguments) {
  const TrainOptions defaults;
  po::options_description description("Options");
  // Numbers are read as text and checked here, so a bad value gets a message
  // naming the accepted range rather than Boost's generic one.
  description.add_options()
      ("help,h", "print this help and exit")
      ("epochs", po::value<std::string>()->default_value("5"), "epochs to train (1-100000)")
      ("batch-size", po::value<std::string>()->default_value("64"), "samples per batch per rank (1-65536)")
      ("lr", po::value<std::string>()->default_value("0.001"),
       "learning rate of one process; Adam runs with lr x number of ranks")
      ("seed", po::value<std::string>()->default_value("42"),
       "seed of the initial parameters and of the data order (same on every rank)")
      ("data-dir", po::value<std::string>()->default_value(defaults.data_dir),
       "folder with the four MNIST IDX files (scripts/prepare_mnist.sh)")
      ("model", po::value<std::string>()->default_value("mlp"), "mlp (784-128-10) or cnn")
      ("checkpoint-dir", po::value<std::string>(),
       "write last.ckpt after every epoch and best.ckpt (lowest test loss) here")
      ("resume", "continue from <checkpoint-dir>/last.ckpt")
      ("early-stopping-patience", po::value<std::string>()->default_value("0"),
       "stop after this many epochs without a lower test loss (0: never)")
      ("clip-grad-norm", po::value<std::string>()->default_value("0"),
       "clip the averaged gradients to this global L2 norm (0: no clipping)")
      ("accumulate", po::value<std::string>()->default_value("1"),
       "backward passes per optimizer step (gradient accumulation, 1-1024)")
      ("compression", po::value<std::string>()->default_value("none"),
       "gradient compression: none, fp16 or bf16")
      ("threads", po::value<std::string>()->default_value("1"), "LibTorch threads per rank (1-1024)")
      ("summary-json", po::value<std::string>(), "write a JSON summary of the run here (rank 0)")
      ("progress", po::value<std::string>()->default_value("auto"),
       "live: a live line during each epoch; epochs: one line per epoch only; "
       "auto: live when stdout is a terminal");

  po::variables_map values;
  try {
    const po::parsed_options parsed_options =
        po::command_line_parser(arguments)
            .options(description)
            .style(po::command_line_style::unix_style ^ po::command_line_style::allow_guessing)
            .run();
    // Without declared positional options Boost keeps stray words aside
    // instead of refusing them.
    const std::vector<std::string> stray =
        po::collect_unrecognized(parsed_options.options, po::include_positional);
    if (!stray.empty()) {
      fail("Unexpected argument '" + stray.front() +
           "': train_mnist takes options only (train_mnist --help lists them)");
    }
    po::store(parsed_options, values);
    po::notify(values);
  } catch (const po::error& e) {
    fail(std::string(e.what()) + " (train_mnist --help lists the options)");
  }

  ParsedCommandLine parsed;
  if (values.count("help")) {
    parsed.help = usage(description);
    return parsed;
  }
  auto text = [&](const char* flag) { return values[flag].as<std::string>(); };
  TrainOptions options;
  options.epochs = parse_integer("epochs", text("epochs"), 1, 100000);
  options.batch_size = parse_integer("batch-size", text("batch-size"), 1, 65536);
  options.lr = parse_number("lr", text("lr"), /*allow_zero=*/false, 10.0);
  options.seed = parse_unsigned("seed", text("seed"), 0, std::numeric_limits<uint64_t>::max(),
                                "an integer from 0 to 18446744073709551615");
  options.data_dir = text("data-dir");
  if (options.data_dir.empty()) invalid("data-dir", "", "a folder with the MNIST IDX files");
  const std::string model = text("model");
  if (model != "mlp" && model != "cnn") invalid("model", model, "mlp or cnn");
  options.model = parse_model_kind(model);
  if (values.count("checkpoint-dir")) {
    options.checkpoint_dir = text("checkpoint-dir");
    if (options.checkpoint_dir.empty()) invalid("checkpoint-dir", "", "a folder for checkpoints");
  }
  options.resume = values.count("resume") > 0;
  if (options.resume && options.checkpoint_dir.empty()) {
    fail("--resume needs --checkpoint-dir (the folder whose last.ckpt to continue from)");
  }
  options.early_stopping_patience =
      parse_integer("early-stopping-patience", text("early-stopping-patience"), 0, 100000);
  options.clip_grad_norm = parse_number("clip-grad-norm", text("clip-grad-norm"), true, 1e9);
  options.accumulate = parse_integer("accumulate", text("accumulate"), 1, 1024);
  const std::string compression = text("compression");
  if (compression != "none" && compression != "fp16" && compression != "bf16") {
    invalid("compression", compression, "none, fp16 or bf16");
  }
  options.compression = chorus::torch::parse_compression(compression);
  options.threads = static_cast<int>(parse_integer("threads", text("threads"), 1, 1024));
  if (values.count("summary-json")) {
    options.summary_json = text("summary-json");
    if (options.summary_json.empty()) invalid("summary-json", "", "a file path");
  }
  const std::string progress = text("progress");
  if (progress == "auto") {
    options.progress = TrainOptions::Progress::kAuto;
  } else if (progress == "live") {
    options.progress = TrainOptions::Progress::kLive;
  } else if (progress == "epochs") {
    options.progress = TrainOptions::Progress::kEpochs;
  } else {
    invalid("progress", progress, "auto, live or epochs");
  }
  parsed.options = options;
  return parsed;
}

}  // namespace train_mnist
