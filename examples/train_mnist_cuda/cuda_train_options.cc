#include "cuda_train_options.h"

#include <boost/program_options.hpp>

#include <sstream>

#include "command_line.h"
#include "example_error.h"
#include "option_values.h"

namespace po = boost::program_options;

namespace train_mnist_cuda {
namespace {

using train_mnist::declare_shared_options;
using train_mnist::fail;
using train_mnist::invalid_option;
using train_mnist::parse_command_line;
using train_mnist::parse_integer_option;
using train_mnist::parse_number_option;
using train_mnist::parse_progress_option;
using train_mnist::read_checkpoint_dir;
using train_mnist::read_shared_options;

std::string usage(const po::options_description& description) {
  std::ostringstream out;
  out << "train_mnist_cuda: data-parallel MNIST training on GPUs (cuBLAS and cuDNN, no LibTorch);\n"
         "Chorus averages the gradients. Run it under chorusrun or mpirun, one rank per GPU (a\n"
         "rank uses GPU local_rank % number of GPUs, or CHORUS_CUDA_DEVICE when set); every\n"
         "rank takes the same options.\n\n"
      << description;
  return out.str();
}

}  // namespace

ParsedCudaCommandLine parse_cuda_train_options(const std::vector<std::string>& arguments) {
  const CudaTrainOptions defaults;
  po::options_description description("Options");
  declare_shared_options(&description, defaults.data_dir);
  // This example's own options, as text too (checked when read).
  description.add_options()
      ("checkpoint-dir", po::value<std::string>(),
       "write last.ckpt after every epoch and best.ckpt (lowest test loss) here")
      ("resume", "continue from <checkpoint-dir>/last.ckpt")
      ("early-stopping-patience", po::value<std::string>()->default_value("0"),
       "stop after this many epochs without a lower test loss (0: never)")
      ("clip-grad-norm", po::value<std::string>()->default_value("0"),
       "clip the averaged gradients to this global L2 norm (0: no clipping)")
      ("accumulate", po::value<std::string>()->default_value("1"),
       "backward passes per optimizer step (gradient accumulation, 1-1024)")
      ("summary-json", po::value<std::string>(), "write a JSON summary of the run here (rank 0)")
      ("progress", po::value<std::string>()->default_value("auto"),
       "live: a live line during each epoch; epochs: one line per epoch only; "
       "auto: live when stdout is a terminal");

  const po::variables_map values = parse_command_line(arguments, description, "train_mnist_cuda");

  ParsedCudaCommandLine parsed;
  if (values.count("help")) {
    parsed.help = usage(description);
    return parsed;
  }
  auto text = [&](const char* flag) { return values[flag].as<std::string>(); };
  CudaTrainOptions options;
  read_shared_options(values, &options);
  read_checkpoint_dir(values, &options);
  options.resume = values.count("resume") > 0;
  if (options.resume && options.checkpoint_dir.empty()) {
    fail("--resume needs --checkpoint-dir (the folder whose last.ckpt to continue from)");
  }
  options.early_stopping_patience =
      parse_integer_option("early-stopping-patience", text("early-stopping-patience"), 0, 100000);
  options.clip_grad_norm = parse_number_option("clip-grad-norm", text("clip-grad-norm"), true, 1e9);
  options.accumulate = parse_integer_option("accumulate", text("accumulate"), 1, 1024);
  if (values.count("summary-json")) {
    options.summary_json = text("summary-json");
    if (options.summary_json.empty()) invalid_option("summary-json", "", "a file path");
  }
  options.progress = parse_progress_option<CudaTrainOptions::Progress>(text("progress"));
  parsed.options = options;
  return parsed;
}

}  // namespace train_mnist_cuda
