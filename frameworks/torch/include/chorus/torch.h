// The LibTorch front end of Chorus, in one include (library chorus_torch).
#pragma once

#include "chorus/chorus.h"

// The binding: what horovod.torch offers (chorus_torch_binding).
#include "chorus/torch/autocast.h"
#include "chorus/torch/distributed_optimizer.h"
#include "chorus/torch/grad_scaler.h"
#include "chorus/torch/learning_rate.h"
#include "chorus/torch/ops.h"
#include "chorus/torch/state_broadcast.h"

// Feeding ranks their data (chorus_torch_data).
#include "chorus/torch/data/distributed_sampler.h"
#include "chorus/torch/data/prefetch_loader.h"

// A run's state: checkpoints, early stopping, elastic state (chorus_torch_checkpoint).
#include "chorus/torch/checkpoint/checkpoint.h"
#include "chorus/torch/checkpoint/checkpoint_extras.h"
#include "chorus/torch/checkpoint/checkpoint_manager.h"
#include "chorus/torch/checkpoint/early_stopping.h"
#include "chorus/torch/checkpoint/elastic_state.h"
#include "chorus/torch/checkpoint/metric_mode.h"
#include "chorus/torch/checkpoint/model_signature.h"

// Pipeline parallelism (chorus_torch_pipeline).
#include "chorus/torch/pipeline/model_split.h"
#include "chorus/torch/pipeline/pipeline.h"
