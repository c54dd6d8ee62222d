#include "train_options.h"

#include <boost/program_options.hpp>

#include <sstream>

#include "command_line.h"
#include "example_error.h"
#include "option_values.h"

namespace po = boost::program_options;

namespace train_mnist {
namespace {

std::string usage(const po::options_description& description) {
  std::ostringstream out;
  out << "train_mnist: data- and pipeline-parallel MNIST training with Chorus (run it under mpirun or chorusrun;\n"
         "every rank takes the same options).\n\n"
      << description;
  return out.str();
}

// What pipeline training does not combine with (yet): each stage holds only
// part of the model, so whole-model checkpoints and a global gradient norm
// would need every stage; micro-batches already accumulate gradients.
void check_pipeline_options(const TrainOptions& options) {
  if (!options.pipelined()) {
    if (options.micro_batches > 1) {
      fail("--micro-batches=" + std::to_string(options.micro_batches) +
           " needs --pipeline-stages > 1 (for gradient accumulation without a pipeline use "
           "--accumulate)");
    }
    if (!options.pipeline_trace.empty()) fail("--pipeline-trace needs --pipeline-stages > 1");
    return;
  }
  const std::string with = " cannot be combined with --pipeline-stages > 1";
  if (!options.checkpoint_dir.empty()) fail("--checkpoint-dir" + with);
  if (options.amp != chorus::torch::AmpMode::kOff) fail("--amp" + with);
  if (options.clip_grad_norm > 0) fail("--clip-grad-norm" + with);
  if (options.accumulate > 1) fail("--accumulate" + with + " (micro-batches accumulate already)");
  if (options.batch_size % options.micro_batches != 0) {
    fail("--micro-batches=" + std::to_string(options.micro_batches) +
         " does not divide --batch-size=" + std::to_string(options.batch_size) +
         ": expected a number of micro-batches that divides the batch of one pipeline");
  }
}

void check_elastic_options(const po::variables_map& values, TrainOptions* options) {
  options->elastic = values.count("elastic") > 0;
  for (const char* flag : {"commit-every", "elastic-dir"}) {
    if (values.count(flag) && !options->elastic) fail(std::string("--") + flag + " needs --elastic");
  }
  if (!options->elastic) return;
  if (values.count("commit-every")) {
    options->commit_every =
        parse_integer_option("commit-every", values["commit-every"].as<std::string>(), 1, 1000000);
  }
  if (values.count("elastic-dir")) {
    options->elastic_dir = values["elastic-dir"].as<std::string>();
    if (options->elastic_dir.empty()) invalid_option("elastic-dir", "", "a folder on each host's own disk");
  }
  // Elastic state is the whole model on every rank: data parallel only.
  if (options->pipelined()) fail("--elastic cannot be combined with --pipeline-stages > 1");
  if (options->resume) fail("--elastic cannot be combined with --resume (an elastic run resumes from its own commits)");
}

}  // namespace

ParsedCommandLine parse_train_options(const std::vector<std::string>& arguments) {
  const TrainOptions defaults;
  po::options_description description("Options");
  declare_shared_options(&description, defaults.data_dir);
  // This example's own options, as text too (checked when read).
  description.add_options()
      ("model", po::value<std::string>()->default_value("mlp"), "mlp (784-128-10) or cnn")
      ("checkpoint-dir", po::value<std::string>(),
       "write checkpoint-<epoch>.ckpt after every epoch and best.ckpt (lowest test loss) here")
      ("keep-checkpoints", po::value<std::string>()->default_value("1"),
       "how many of the newest checkpoint-<epoch>.ckpt files to keep (1-10000)")
      ("resume", "continue from the newest checkpoint in <checkpoint-dir>")
      ("early-stopping-patience", po::value<std::string>()->default_value("0"),
       "stop after this many epochs without a lower test loss (0: never)")
      ("warmup-epochs", po::value<std::string>()->default_value("0"),
       "raise the learning rate linearly from lr to lr x number of ranks over these epochs "
       "(fractions allowed, 0-1000; 0: lr x ranks from the start)")
      ("clip-grad-norm", po::value<std::string>()->default_value("0"),
       "clip the averaged gradients to this global L2 norm (0: no clipping)")
      ("accumulate", po::value<std::string>()->default_value("1"),
       "backward passes per optimizer step (gradient accumulation, 1-1024)")
      ("compression", po::value<std::string>()->default_value("none"),
       "gradient compression: none, fp16 or bf16")
      ("threads", po::value<std::string>()->default_value("1"), "LibTorch threads per rank (1-1024)")
      ("amp", po::value<std::string>()->default_value("off"),
       "mixed precision: off, bf16 (bfloat16 autocast on the CPU, with a gradient scaler) or fp16 "
       "(float16; refused where the CPU kernels have no float16 matrix product, as in LibTorch 1.13)")
      ("summary-json", po::value<std::string>(), "write a JSON summary of the run here (rank 0)")
      ("pipeline-stages", po::value<std::string>()->default_value("1"),
       "split the model into this many pipeline stages on consecutive ranks (1-64; the number "
       "of ranks must be a multiple); --batch-size is then per pipeline")
      ("micro-batches", po::value<std::string>()->default_value("1"),
       "micro-batches per pipeline batch (1-65536; must divide --batch-size; needs "
       "--pipeline-stages > 1)")
      ("schedule", po::value<std::string>()->default_value("1f1b"), "pipeline schedule: gpipe or 1f1b")
      ("pipeline-trace", po::value<std::string>(),
       "write a Chrome trace of every stage's forward and backward spans here (rank 0)")
      ("progress", po::value<std::string>()->default_value("auto"),
       "live: a live line during each epoch; epochs: one line per epoch only; "
       "auto: live when stdout is a terminal")
      ("loader", po::value<std::string>()->default_value("prefetch"),
       "prefetch: build the next batches on background threads; preloaded: index_select each "
       "batch on the training thread (same batches)")
      ("loader-workers", po::value<std::string>()->default_value("1"),
       "background threads of --loader prefetch (1-64)")
      ("prefetch-depth", po::value<std::string>()->default_value("4"),
       "batches --loader prefetch prepares ahead (1-1024)")
      ("elastic", "elastic training under chorusrun --elastic: commit the state every --commit-every "
       "steps on every host's disk and resume from the newest commit after a restart")
      ("commit-every", po::value<std::string>(),
       "with --elastic: optimizer steps between commits (1-1000000; default 20; epochs' ends commit too)")
      ("elastic-dir", po::value<std::string>(),
       "with --elastic: each host's commit folder (default $CHORUS_ELASTIC_DIR or /tmp/chorus-elastic)");

  const po::variables_map values = parse_command_line(arguments, description, "train_mnist");

  ParsedCommandLine parsed;
  if (values.count("help")) {
    parsed.help = usage(description);
    return parsed;
  }
  auto text = [&](const char* flag) { return values[flag].as<std::string>(); };
  TrainOptions options;
  read_shared_options(values, &options);
  const std::string model = text("model");
  if (model != "mlp" && model != "cnn") invalid_option("model", model, "mlp or cnn");
  options.model = parse_model_kind(model);
  read_checkpoint_dir(values, &options);
  options.resume = values.count("resume") > 0;
  if (options.resume && options.checkpoint_dir.empty()) {
    fail("--resume needs --checkpoint-dir (the folder whose newest checkpoint to continue from)");
  }
  options.keep_checkpoints = parse_integer_option("keep-checkpoints", text("keep-checkpoints"), 1, 10000);
  options.early_stopping_patience =
      parse_integer_option("early-stopping-patience", text("early-stopping-patience"), 0, 100000);
  options.clip_grad_norm = parse_number_option("clip-grad-norm", text("clip-grad-norm"), true, 1e9);
  options.warmup_epochs = parse_number_option("warmup-epochs", text("warmup-epochs"), true, 1000);
  options.accumulate = parse_integer_option("accumulate", text("accumulate"), 1, 1024);
  const std::string compression = text("compression");
  if (compression != "none" && compression != "fp16" && compression != "bf16") {
    invalid_option("compression", compression, "none, fp16 or bf16");
  }
  options.compression = chorus::torch::parse_compression(compression);
  options.threads = static_cast<int>(parse_integer_option("threads", text("threads"), 1, 1024));
  const std::string amp = text("amp");
  if (amp != "off" && amp != "bf16" && amp != "fp16") invalid_option("amp", amp, "off, bf16 or fp16");
  options.amp = chorus::torch::parse_amp_mode(amp);
  if (values.count("summary-json")) {
    options.summary_json = text("summary-json");
    if (options.summary_json.empty()) invalid_option("summary-json", "", "a file path");
  }
  options.pipeline_stages =
      static_cast<int>(parse_integer_option("pipeline-stages", text("pipeline-stages"), 1, 64));
  options.micro_batches =
      static_cast<int>(parse_integer_option("micro-batches", text("micro-batches"), 1, 65536));
  const std::string schedule = text("schedule");
  if (schedule != "gpipe" && schedule != "1f1b") invalid_option("schedule", schedule, "gpipe or 1f1b");
  options.schedule = chorus::torch::parse_pipeline_schedule(schedule);
  if (values.count("pipeline-trace")) {
    options.pipeline_trace = text("pipeline-trace");
    if (options.pipeline_trace.empty()) invalid_option("pipeline-trace", "", "a file path");
  }
  check_pipeline_options(options);
  options.progress = parse_progress_option<TrainOptions::Progress>(text("progress"));
  const std::string loader = text("loader");
  if (loader == "prefetch") {
    options.loader = TrainOptions::Loader::kPrefetch;
  } else if (loader == "preloaded") {
    options.loader = TrainOptions::Loader::kPreloaded;
  } else {
    invalid_option("loader", loader, "prefetch or preloaded");
  }
  options.loader_workers =
      static_cast<int>(parse_integer_option("loader-workers", text("loader-workers"), 1, 64));
  options.prefetch_depth = parse_integer_option("prefetch-depth", text("prefetch-depth"), 1, 1024);
  check_elastic_options(values, &options);
  parsed.options = options;
  return parsed;
}

}  // namespace train_mnist
