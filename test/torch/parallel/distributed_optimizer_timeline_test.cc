// Overlap of communication with backward, read from rank 0's timeline.
//
// The model is x -> mm(first) -> tanh -> probe -> mm(last). Backward reaches
// `last` first: its accumulator hook submits "overlap.last". Then the probe's
// backward runs a blocking allreduce of its own ("overlap.probe"), and only
// after that does backward go on to compute the gradient of `first`, whose
// hook submits "overlap.first".
//
// Why the probe: whether the runtime gets to a gradient before the rest of a
// tiny backward pass is over depends on scheduling. The probe makes it a
// matter of cause and effect instead: every rank submitted "overlap.last"
// before "overlap.probe", so when the probe completes (which needs all ranks)
// the last layer's gradient was ready everywhere and was negotiated in the
// probe's cycle or an earlier one. The test checks on rank 0's trace (one
// clock) that
//   1. "overlap.last" finished negotiating, and its ALLREDUCE span started,
//      before "overlap.first" was even submitted (the start of its NEGOTIATE_ALLREDUCE
//      span is its enqueue time, inside backward, so before backward returned);
//   2. the probe's allreduce ended before "overlap.first" was submitted (the
//      causal chain the argument rests on, seen on the trace's clock).
// The probe only makes the gap long and certain; the hooks are what start the
// allreduce early: without them nothing would be submitted before step().
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/torch/distributed_optimizer.h"
#include "support/harness.h"

namespace chorus_test {
namespace {

using chorus::torch::DistributedOptimizer;
using chorus::torch::DistributedOptimizerOptions;

constexpr int64_t kTimelineRows = 16;

// Identity forward; backward blocks on a collective of its own.
struct Probe : ::torch::autograd::Function<Probe> {
  static ::torch::Tensor forward(::torch::autograd::AutogradContext* /*ctx*/,
                                 const ::torch::Tensor& input) {
    return input.clone();
  }
  static ::torch::autograd::variable_list backward(::torch::autograd::AutogradContext* /*ctx*/,
                                                   ::torch::autograd::variable_list grads) {
    float one = 1.0f;
    chorus::allreduce("overlap.probe", chorus::Tensor(&one, chorus::DataType::kFloat32, {1}));
    return {grads[0]};
  }
};

::torch::Tensor forward(const ::torch::Tensor& x, const ::torch::Tensor& first,
                        const ::torch::Tensor& last) {
  return Probe::apply(::torch::tanh(x.mm(first))).mm(last);
}

struct Span {
  double begin = 0.0;
  double end = 0.0;
};
// (tensor, activity) -> span; each appears once in this run.
using Spans = std::map<std::pair<std::string, std::string>, Span>;

// The spans of the trace by lane name ("ph": "M" events name a lane
// ("tid") after its tensor in args.name; "ph": "X" events are spans).
Spans parse_spans(const std::string& text) {
  Spans spans;
  const auto trace = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(trace.is_array()) << "the trace is not a JSON array:\n" << text;
  if (!trace.is_array()) return spans;
  std::map<int, std::string> tensor_of_lane;
  for (const auto& event : trace) {
    if (event.at("ph") == "M") tensor_of_lane[event.at("tid").get<int>()] = event.at("args").at("name");
  }
  for (const auto& event : trace) {
    if (event.at("ph") != "X") continue;
    const auto lane = tensor_of_lane.find(event.at("tid").get<int>());
    EXPECT_NE(lane, tensor_of_lane.end()) << "span on an unnamed lane: " << event;
    if (lane == tensor_of_lane.end()) continue;
    const double ts = event.at("ts").get<double>();
    spans[{lane->second, event.at("name").get<std::string>()}] = {ts, ts + event.at("dur").get<double>()};
  }
  return spans;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(DistributedOptimizerTimelineTest, LastLayerAllreduceStartsBeforeFirstLayerGradientExists) {
  ::torch::set_num_threads(1);
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" +
                           shared_token() + "_optimizer_timeline.json";
  {
    ScopedEnv env("CHORUS_TIMELINE", path.c_str());
    ASSERT_TRUE(init_chorus());
  }
  const int rank = chorus::rank(), size = chorus::size();

  ::torch::manual_seed(5);
  ::torch::Tensor first = ::torch::randn({8, 16}).requires_grad_();
  ::torch::Tensor last = ::torch::randn({16, 4}).requires_grad_();
  ::torch::optim::SGD sgd(std::vector<::torch::Tensor>{first, last}, ::torch::optim::SGDOptions(0.1));
  DistributedOptimizerOptions options;
  options.name_prefix = "overlap";
  DistributedOptimizer optimizer(sgd, {{"first", first}, {"last", last}}, options);

  ::torch::manual_seed(6);
  const ::torch::Tensor x = ::torch::randn({kTimelineRows * size, 8});
  forward(x.narrow(0, rank * kTimelineRows, kTimelineRows), first, last).pow(2).mean().backward();
  EXPECT_NO_THROW(optimizer.synchronize());

  // The reduced gradients are the mean of every rank's, computed locally.
  const ::torch::Tensor first_copy = first.detach().clone().requires_grad_();
  const ::torch::Tensor last_copy = last.detach().clone().requires_grad_();
  std::vector<::torch::Tensor> mean_losses;
  for (int r = 0; r < size; ++r) {
    const auto part = x.narrow(0, r * kTimelineRows, kTimelineRows);
    mean_losses.push_back(::torch::tanh(part.mm(first_copy)).mm(last_copy).pow(2).mean() / size);
  }
  ::torch::stack(mean_losses).sum().backward();
  EXPECT_TRUE(first.grad().allclose(first_copy.grad(), 1e-5, 1e-7));
  EXPECT_TRUE(last.grad().allclose(last_copy.grad(), 1e-5, 1e-7));

  shutdown_chorus();  // closes the trace
  if (rank != 0) return;
  const Spans spans = parse_spans(read_text(path));
  std::remove(path.c_str());
  for (const char* tensor : {"overlap.last", "overlap.probe", "overlap.first"}) {
    for (const char* activity : {"NEGOTIATE_ALLREDUCE", "ALLREDUCE"}) {
      ASSERT_EQ(spans.count({tensor, activity}), 1u) << tensor << " has no " << activity << " span";
    }
  }
  const Span last_negotiated = spans.at({"overlap.last", "NEGOTIATE_ALLREDUCE"});
  const Span last_reduced = spans.at({"overlap.last", "ALLREDUCE"});
  const Span probe_reduced = spans.at({"overlap.probe", "ALLREDUCE"});
  const Span probe_negotiated = spans.at({"overlap.probe", "NEGOTIATE_ALLREDUCE"});
  const double first_submitted = spans.at({"overlap.first", "NEGOTIATE_ALLREDUCE"}).begin;

  // Equal when both were negotiated in one cycle; an end is ts + dur, two
  // values printed to 1 ns, so allow 2 ns of rounding.
  constexpr double kRoundingMicros = 0.002;
  EXPECT_LE(last_negotiated.end, probe_negotiated.end + kRoundingMicros)
      << "the last layer's gradient was negotiated after the probe submitted later";
  EXPECT_LT(probe_reduced.end, first_submitted)
      << "the first layer's gradient was submitted before the probe's allreduce ended";
  EXPECT_LT(last_negotiated.end, first_submitted)
      << "the last layer's gradient was not negotiated before the first layer's existed";
  EXPECT_LT(last_reduced.begin, first_submitted)
      << "the last layer's allreduce did not start before the first layer's gradient existed";
}

}  // namespace
}  // namespace chorus_test
