// The LibTorch front end of Chorus, in one include.
#pragma once

#include "chorus/chorus.h"
#include "chorus/torch/autocast.h"
#include "chorus/torch/distributed_optimizer.h"
#include "chorus/torch/distributed_sampler.h"
#include "chorus/torch/elastic_state.h"
#include "chorus/torch/grad_scaler.h"
#include "chorus/torch/learning_rate.h"
#include "chorus/torch/model_split.h"
#include "chorus/torch/ops.h"
#include "chorus/torch/pipeline.h"
#include "chorus/torch/prefetch_loader.h"
#include "chorus/torch/state_broadcast.h"
