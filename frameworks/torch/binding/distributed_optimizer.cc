// DistributedOptimizer: checks what it is given, finds the parameters the
// wrapped optimizer updates, and wires a GradientReducer (per-step state and
// collectives) to GradientHooks (autograd's accumulator post-hooks).
#include "chorus/torch/distributed_optimizer.h"

#include <torch/optim/lbfgs.h>

#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "adasum_update.h"
#include "chorus/torch/ops.h"
#include "gradient_hooks.h"
#include "gradient_reducer.h"
#include "tensor_adapter.h"

namespace chorus {
namespace torch {

const char* compression_name(Compression compression) {
  switch (compression) {
    case Compression::kNone: return "none";
    case Compression::kFP16: return "fp16";
    case Compression::kBF16: return "bf16";
  }
  return "unknown";
}

Compression parse_compression(const std::string& name) {
  for (Compression c : {Compression::kNone, Compression::kFP16, Compression::kBF16}) {
    if (name == compression_name(c)) return c;
  }
  throw Error(Status::InvalidArgument("compression '" + name +
                                      "' is invalid: expected one of none, fp16, bf16"));
}

namespace {

using NamedList = std::vector<std::pair<std::string, ::torch::Tensor>>;

Status invalid_option(const std::string& message) {
  return Status::InvalidArgument("DistributedOptimizer: " + message);
}

void check_options(const DistributedOptimizerOptions& options) {
  if (options.op != ReduceOp::kAverage && options.op != ReduceOp::kSum && options.op != ReduceOp::kAdasum) {
    throw Error(invalid_option(std::string("reduce op ") + reduce_op_name(options.op) +
                        " is not supported; expected average, sum or adasum"));
  }
  const std::string compression = compression_name(options.compression);
  if (compression == "unknown") {
    throw Error(invalid_option("compression " + std::to_string(static_cast<int>(options.compression)) +
                        " is invalid; expected none, fp16 or bf16"));
  }
  if (options.backward_passes_per_step < 1) {
    throw Error(invalid_option("backward_passes_per_step=" +
                        std::to_string(options.backward_passes_per_step) +
                        " is invalid; expected an integer >= 1"));
  }
  const double factor = options.gradient_predivide_factor;
  if (!std::isfinite(factor) || factor <= 0.0) {
    throw Error(invalid_option("gradient_predivide_factor=" + std::to_string(factor) +
                        " is invalid; expected a finite number > 0"));
  }
  if (factor != 1.0 && options.op != ReduceOp::kAverage) {
    throw Error(invalid_option("gradient_predivide_factor=" + std::to_string(factor) +
                        " needs the average op; expected factor 1 with op sum"));
  }
  if (options.name_prefix.empty()) {
    throw Error(invalid_option("name_prefix is empty; expected a non-empty prefix for collective names"));
  }
  if (!options.process_set.is_global() && process_set_rank(options.process_set) < 0) {
    throw Error(invalid_option("rank " + std::to_string(chorus::rank()) + " is not in process set " +
                        std::to_string(options.process_set.id) + "; expected a set this rank is a member of"));
  }
  const int set_size = process_set_size(options.process_set);
  if (options.op == ReduceOp::kAdasum && (set_size & (set_size - 1)) != 0) {
    throw Error(invalid_option("op adasum needs a process set whose size is a power of two (1, 2, 4, 8, ...), but "
                        "process set " + std::to_string(options.process_set.id) + " has " +
                        std::to_string(set_size) + " ranks"));
  }
}

// The parameters the optimizer updates, named. Parameters that do not
// require grad never get a gradient and are left alone; named parameters
// the optimizer does not update (a frozen part, another optimizer's share)
// are ignored.
std::vector<ReducedParameter> reduced_parameters(::torch::optim::Optimizer& optimizer,
                                                 const NamedList& named,
                                                 const std::string& prefix, bool adasum) {
  std::unordered_map<std::string, size_t> position_of_name;
  std::unordered_map<const c10::TensorImpl*, const std::string*> name_of;
  for (size_t i = 0; i < named.size(); ++i) {
    const auto& [name, tensor] = named[i];
    const auto [it, inserted] = position_of_name.emplace(name, i);
    if (!inserted) {
      throw Error(invalid_option("duplicate parameter name '" + name + "' (positions " +
                          std::to_string(it->second) + " and " + std::to_string(i) +
                          "); expected every name once, so that collective names are unique"));
    }
    // A tensor under two names (tied weights) keeps its first name, which
    // is the same on every rank since the list order is.
    if (tensor.defined()) name_of.emplace(tensor.unsafeGetTensorImpl(), &name);
  }

  std::vector<ReducedParameter> result;
  std::unordered_set<const c10::TensorImpl*> seen;
  const auto& groups = optimizer.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& params = groups[g].params();
    for (size_t i = 0; i < params.size(); ++i) {
      const ::torch::Tensor& param = params[i];
      if (!param.defined() || !param.requires_grad()) continue;
      if (!seen.insert(param.unsafeGetTensorImpl()).second) continue;
      const auto found = name_of.find(param.unsafeGetTensorImpl());
      if (found == name_of.end()) {
        throw Error(invalid_option("the optimizer updates a parameter (group " + std::to_string(g) +
                            ", index " + std::to_string(i) + ", shape " +
                            shape_to_string(Shape(param.sizes().begin(), param.sizes().end())) +
                            ") that is not among the named parameters; expected every "
                            "parameter the optimizer updates to be named"));
      }
      const std::string name = prefix + "." + *found->second;
      if (!param.is_leaf()) {
        throw Error(invalid_option("parameter '" + *found->second +
                            "' is not a leaf tensor; expected model parameters"));
      }
      // Refused here, before any hook is registered, with the message the
      // gradient's own submission would give.
      detail::check_usable(param, name);
      const DataType dtype = to_chorus_dtype(param.scalar_type(), name);
      if (!is_floating_point(dtype)) {
        throw Error(invalid_option("parameter '" + *found->second + "' has dtype " + dtype_name(dtype) +
                            "; expected a floating-point parameter"));
      }
      if (adasum && !param.device().is_cpu()) {
        throw Error(invalid_option("op adasum runs on CPU tensors only, but parameter '" + *found->second + "' is on " +
                            param.device().str()));
      }
      result.push_back({name, param});
    }
  }
  return result;
}

void refuse_lbfgs(::torch::optim::Optimizer& optimizer) {
  if (dynamic_cast<::torch::optim::LBFGS*>(&optimizer) != nullptr) {
    throw Error(invalid_option(
        "LBFGS is not supported: it evaluates the model several times inside one step(), so "
        "gradients would need an allreduce per evaluation; expected an optimizer that steps once "
        "per gradient (SGD, Adam, AdamW, RMSprop, Adagrad)"));
  }
}

NamedList to_list(const NamedParameters& parameters) {
  NamedList list;
  list.reserve(parameters.size());
  for (const auto& item : parameters) list.emplace_back(item.key(), item.value());
  return list;
}

}  // namespace

// Gradients reduced during backward (a reducer fed by hooks), or, with op
// adasum, the optimizer's updates reduced in step() (no hooks).
struct DistributedOptimizer::State {
  State(std::vector<ReducedParameter> parameters, const DistributedOptimizerOptions& options) {
    if (options.op == ReduceOp::kAdasum) {
      adasum = std::make_unique<AdasumUpdate>(std::move(parameters), options);
      return;
    }
    reducer = std::make_unique<GradientReducer>(std::move(parameters), options);
    hooks = std::make_unique<GradientHooks>(params_of(*reducer),
                                            [this](size_t index) { reducer->gradient_ready(index); });
  }

  static std::vector<::torch::Tensor> params_of(const GradientReducer& reducer) {
    std::vector<::torch::Tensor> params;
    for (const auto& p : reducer.parameters()) params.push_back(p.param);
    return params;
  }

  std::unique_ptr<GradientReducer> reducer;
  std::unique_ptr<AdasumUpdate> adasum;
  // Declared last so it is destroyed first: no hook can run into a reducer
  // that is going away.
  std::unique_ptr<GradientHooks> hooks;
};

DistributedOptimizer::DistributedOptimizer(::torch::optim::Optimizer& optimizer,
                                           const NamedParameters& parameters,
                                           DistributedOptimizerOptions options)
    : DistributedOptimizer(optimizer, to_list(parameters), std::move(options)) {}

DistributedOptimizer::DistributedOptimizer(
    ::torch::optim::Optimizer& optimizer,
    std::initializer_list<std::pair<std::string, ::torch::Tensor>> parameters,
    DistributedOptimizerOptions options)
    : DistributedOptimizer(optimizer, NamedList(parameters), std::move(options)) {}

DistributedOptimizer::DistributedOptimizer(::torch::optim::Optimizer& optimizer,
                                           const NamedList& parameters,
                                           DistributedOptimizerOptions options)
    : optimizer_(optimizer), options_(std::move(options)) {
  refuse_lbfgs(optimizer_);
  check_options(options_);
  state_ = std::make_unique<State>(
      reduced_parameters(optimizer_, parameters, options_.name_prefix, options_.op == ReduceOp::kAdasum), options_);
}

DistributedOptimizer::~DistributedOptimizer() = default;

void DistributedOptimizer::synchronize() {
  if (state_->reducer) state_->reducer->synchronize();
}

void DistributedOptimizer::step() {
  if (state_->adasum) {
    state_->adasum->step(optimizer_);
    return;
  }
  if (skip_synchronize_) {
    // The caller synchronized already (and clipped, say); gradients still on
    // the wire would be read while the runtime writes them.
    throw_if_error(state_->reducer->check_idle("step() inside skip_synchronize()"));
  } else {
    synchronize();
  }
  optimizer_.step();
}

void DistributedOptimizer::zero_grad() {
  if (state_->reducer) throw_if_error(state_->reducer->check_idle("zero_grad()"));
  optimizer_.zero_grad();
}

int64_t DistributedOptimizer::allreduces_submitted() const {
  return state_->reducer ? state_->reducer->allreduces_submitted() : state_->adasum->allreduces_submitted();
}

DistributedOptimizer::SkipSynchronize::SkipSynchronize(DistributedOptimizer& owner)
    : owner_(owner) {
  if (owner_.state_->adasum) {
    // Horovod refuses it too: there is nothing to skip.
    throw Error(invalid_option("skip_synchronize() does not apply to op adasum: its step() combines the optimizer's "
                        "updates, not the gradients, which stay local (clip them before step() without it)"));
  }
  owner_.skip_synchronize_ = true;
}

DistributedOptimizer::SkipSynchronize::~SkipSynchronize() { owner_.skip_synchronize_ = false; }

}  // namespace torch
}  // namespace chorus
