// Command-line options of train_mnist.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chorus/torch/autocast.h"
#include "chorus/torch/distributed_optimizer.h"
#include "chorus/torch/pipeline/pipeline_schedule.h"
#include "models.h"

namespace train_mnist {

struct TrainOptions {
  int64_t epochs = 5;
  int64_t batch_size = 64;  // per rank
  double lr = 1e-3;         // single-process learning rate; the run uses lr x size()
  // Epochs over which the learning rate rises linearly from lr to lr x
  // size() (chorus::torch::LearningRateWarmup); 0: lr x size() from the start.
  double warmup_epochs = 0;
  uint64_t seed = 42;
  std::string data_dir = "data/mnist";
  ModelKind model = ModelKind::kMlp;
  std::string checkpoint_dir;  // empty: no checkpoints
  int64_t keep_checkpoints = 1;  // newest checkpoint-<epoch>.ckpt files kept
  bool resume = false;
  int64_t early_stopping_patience = 0;  // 0: off
  double clip_grad_norm = 0;            // 0: off
  int64_t accumulate = 1;               // backward passes per optimizer step
  chorus::torch::Compression compression = chorus::torch::Compression::kNone;
  int threads = 1;  // LibTorch intra-op threads per rank
  // Mixed precision: autocast of the forward pass plus a GradScaler
  // (off: float32 throughout, today's behaviour).
  chorus::torch::AmpMode amp = chorus::torch::AmpMode::kOff;
  std::string summary_json;  // empty: none
  // Pipeline parallelism (1 stage: data parallel only, today's behaviour).
  // With S > 1 stages, consecutive ranks form pipelines and --batch-size is
  // the batch of one pipeline, split into micro_batches.
  int pipeline_stages = 1;
  int micro_batches = 1;
  chorus::torch::PipelineSchedule schedule = chorus::torch::PipelineSchedule::k1F1B;
  std::string pipeline_trace;  // empty: none; else the Chrome trace file (rank 0)
  bool pipelined() const { return pipeline_stages > 1; }
  // The live in-epoch line: "auto" draws it when stdout is a terminal. Under
  // mpirun every rank's stdout is a pseudo-terminal even when mpirun's own
  // output goes to a file, so scripts pass "epochs" (epoch lines only).
  enum class Progress { kAuto, kLive, kEpochs };
  Progress progress = Progress::kAuto;
  // Training batches: built ahead on background threads by a PrefetchLoader,
  // or index_select()ed on the training thread as before (same batches).
  enum class Loader { kPrefetch, kPreloaded };
  Loader loader = Loader::kPrefetch;
  int loader_workers = 1;
  int64_t prefetch_depth = 4;
  // Elastic training (chorusrun --elastic): commit the state every
  // commit_every optimizer steps and at every epoch's end, resume from the
  // newest commit after a restart, stop at a commit when chorusrun says
  // more hosts are available.
  bool elastic = false;
  int64_t commit_every = 20;
  std::string elastic_dir;  // empty: $CHORUS_ELASTIC_DIR or /tmp/chorus-elastic
};

// What the command line asked for: options to train with, or help text to
// print (--help).
struct ParsedCommandLine {
  std::optional<TrainOptions> options;
  std::string help;
};

// Throws chorus::Error naming the option, the bad value and what is accepted
// (e.g. "--batch-size=0 is invalid: expected an integer from 1 to 65536").
ParsedCommandLine parse_train_options(const std::vector<std::string>& arguments);

}  // namespace train_mnist
