// chorus_pipeline_bench: the pipeline bubble of GPipe and 1F1B, measured on
// a real pipeline (chorus::torch::Pipeline over Chorus's send/recv) against
// the theoretical (S-1)/(M+S-1). Run under mpirun with np = S (one
// pipeline); test/bench/pipeline/run_pipeline_bench.sh runs S = 2 and 4.
//
// The model is S "work" layers, one per stage, so every stage has the same
// compute: per step F_total of forward and 2 x F_total of backward, split
// evenly over the M micro-batches (a micro-batch of 1/M of the batch costs
// 1/M of the time). --compute sleep: the layer sleeps for its share (the
// stages never compete for a core, so what is measured is the schedule and
// the messages, even with S ranks on fewer cores); --compute matmul: the
// layer multiplies matrices for its share (real CPU work: oversubscribed
// stages share the cores, and the bubble includes that).
//
// Measured bubble of a stage in a step: 1 - (time the stage's layer spent
// computing) / (the step's wall time: from a barrier that starts every stage
// together to the moment the last stage has sent its last message, i.e. the
// slowest rank's time, as the theoretical bubble counts against the whole
// step). Everything that is not the stage's own compute counts: waiting for
// a neighbour, sending, the schedule's bookkeeping. Reported: the median
// over the timed steps of the mean over stages, and of the worst stage.
//
// Prints one JSON object on rank 0 (and writes it to --json).
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "chorus/torch.h"

namespace po = boost::program_options;
namespace ct = chorus::torch;
using Clock = std::chrono::steady_clock;

namespace {

// This rank's compute time in the current step (one stage per rank).
double g_compute_seconds = 0;

// Spends `seconds` of "compute": sleeping or multiplying matrices.
void work(double seconds, bool sleep) {
  const auto start = Clock::now();
  if (sleep) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  } else {
    static const torch::Tensor a = torch::randn({64, 64});
    torch::Tensor b = a;
    const auto until = start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(seconds));
    while (Clock::now() < until) b = torch::tanh(torch::mm(a, b));
  }
  g_compute_seconds += std::chrono::duration<double>(Clock::now() - start).count();
}

// Identity on the data, with a fixed cost in forward and in backward.
struct WorkFunction : public torch::autograd::Function<WorkFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               double forward_s, double backward_s, bool sleep) {
    ctx->saved_data["backward_s"] = backward_s;
    ctx->saved_data["sleep"] = sleep;
    work(forward_s, sleep);
    return x.clone();
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    work(ctx->saved_data["backward_s"].toDouble(), ctx->saved_data["sleep"].toBool());
    return {grads[0], torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

struct WorkLayerImpl : torch::nn::Module {
  WorkLayerImpl(double forward_s, double backward_s, bool sleep)
      : forward_s_(forward_s), backward_s_(backward_s), sleep_(sleep) {
    weight_ = register_parameter("weight", torch::ones({1}));
  }
  torch::Tensor forward(torch::Tensor x) {
    return WorkFunction::apply(x * weight_, forward_s_, backward_s_, sleep_);
  }
  double forward_s_, backward_s_;
  bool sleep_;
  torch::Tensor weight_;
};
TORCH_MODULE(WorkLayer);

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoi(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description description("chorus_pipeline_bench options");
  description.add_options()("help,h", "print this help")(
      "micro-batches", po::value<std::string>()->default_value("1,2,4,8"), "M values, comma-separated")(
      "schedules", po::value<std::string>()->default_value("gpipe,1f1b"), "gpipe, 1f1b or both")(
      "forward-ms", po::value<double>()->default_value(16.0),
      "forward compute per stage per step (backward is twice that)")(
      "compute", po::value<std::string>()->default_value("sleep"), "sleep or matmul")(
      "steps", po::value<int>()->default_value(10), "timed steps per configuration")(
      "warmup-steps", po::value<int>()->default_value(2), "untimed steps first")(
      "json", po::value<std::string>(), "write the results here (rank 0)")(
      "trace", po::value<std::string>(), "write a Chrome trace of the last configuration here");
  po::variables_map values;
  try {
    po::store(po::parse_command_line(argc, argv, description), values);
    po::notify(values);
  } catch (const po::error& e) {
    std::cerr << "chorus_pipeline_bench: " << e.what() << "\n" << description;
    return 2;
  }
  if (values.count("help")) {
    std::cout << description;
    return 0;
  }
  const std::string compute = values["compute"].as<std::string>();
  if (compute != "sleep" && compute != "matmul") {
    std::cerr << "chorus_pipeline_bench: --compute=" << compute << ": expected sleep or matmul\n";
    return 2;
  }
  const bool sleep = compute == "sleep";
  const double forward_s = values["forward-ms"].as<double>() / 1000.0;
  const int steps = values["steps"].as<int>();
  const int warmup = values["warmup-steps"].as<int>();

  chorus::init();
  torch::set_num_threads(1);
  const int S = chorus::size();
  const auto layout = ct::PipelineLayout::make(S, chorus::rank(), S);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  const std::string schedules = values["schedules"].as<std::string>();
  std::vector<std::string> schedule_names;
  for (const char* name : {"gpipe", "1f1b"}) {
    if (schedules.find(name) != std::string::npos) schedule_names.push_back(name);
  }
  const auto micro_batch_counts = parse_list(values["micro-batches"].as<std::string>());
  for (const auto& schedule_name : schedule_names) {
    for (int M : micro_batch_counts) {
      const bool last = schedule_name == schedule_names.back() && M == micro_batch_counts.back();
      torch::nn::Sequential model;
      for (int s = 0; s < S; ++s) model->push_back(WorkLayer(forward_s / M, 2 * forward_s / M, sleep));
      ct::PipelineOptions options;
      options.micro_batches = M;
      options.schedule = ct::parse_pipeline_schedule(schedule_name);
      options.name = "bench." + schedule_name + "." + std::to_string(M);
      options.trace = last && values.count("trace");
      ct::Pipeline pipeline(model, layout, options, ct::make_chorus_stage_link());
      const auto input = torch::randn({8 * M, 16});
      const auto loss = [](const torch::Tensor& out, const torch::Tensor&) { return out.sum(); };
      std::vector<double> mean_bubbles, worst_bubbles, step_seconds;
      for (int step = 0; step < warmup + steps; ++step) {
        chorus::barrier();
        g_compute_seconds = 0;
        const auto start = Clock::now();
        pipeline.train_step(input, input, loss);
        const double wall = std::chrono::duration<double>(Clock::now() - start).count();
        // The step lasts until its last stage is done: every stage's idle
        // time is counted against that, as in the theoretical bubble.
        const double slowest = chorus::torch::allreduce_metric(wall, options.name + ".wall",
                                                               chorus::ReduceOp::kMax);
        const double compute_sum = chorus::torch::allreduce_metric(
            g_compute_seconds, options.name + ".compute", chorus::ReduceOp::kSum);
        const double least_compute = chorus::torch::allreduce_metric(
            g_compute_seconds, options.name + ".least", chorus::ReduceOp::kMin);
        const double mean = 1.0 - compute_sum / S / slowest;
        const double worst = 1.0 - least_compute / slowest;
        if (step >= warmup) {
          mean_bubbles.push_back(mean);
          worst_bubbles.push_back(worst);
          step_seconds.push_back(slowest);
        }
      }
      if (pipeline.trace() != nullptr) {
        pipeline.write_trace(values.count("trace") ? values["trace"].as<std::string>()
                                                   : pipeline.options().trace_path);
      }
      if (chorus::rank() == 0) {
        rows.push_back(nlohmann::ordered_json{{"schedule", schedule_name},
                                              {"stages", S},
                                              {"micro_batches", M},
                                              {"theoretical_bubble", ct::theoretical_bubble(S, M)},
                                              {"measured_bubble", median(mean_bubbles)},
                                              {"worst_stage_bubble", median(worst_bubbles)},
                                              {"step_ms", 1000 * median(step_seconds)}});
        std::cerr << schedule_name << " S=" << S << " M=" << M << ": measured bubble "
                  << median(mean_bubbles) << " (worst stage " << median(worst_bubbles)
                  << "), theoretical " << ct::theoretical_bubble(S, M) << ", step "
                  << 1000 * median(step_seconds) << " ms\n";
      }
    }
  }
  if (chorus::rank() == 0) {
    const nlohmann::ordered_json json{{"benchmark", "pipeline_bubble"},
                                      {"stages", S},
                                      {"compute", compute},
                                      {"forward_ms_per_step", forward_s * 1000},
                                      {"backward_ms_per_step", 2 * forward_s * 1000},
                                      {"steps", steps},
                                      {"hardware_threads", std::thread::hardware_concurrency()},
                                      {"results", std::move(rows)}};
    const std::string text = json.dump(2) + "\n";
    std::cout << text;
    if (values.count("json")) std::ofstream(values["json"].as<std::string>()) << text;
  }
  chorus::shutdown();
  return 0;
}
