// chorus_pipeline_memory_bench: the most memory each stage of a pipeline
// holds at once under GPipe and 1F1B (chorus::torch::Pipeline over Chorus's
// send/recv). Run under mpirun with np = S (one pipeline);
// test/bench/pipeline/run_pipeline_memory_bench.sh runs S = 2 and 4.
//
// Memory = bytes of CPU tensor storage, counted exactly by replacing c10's
// CPU allocator (test/support/cpu_tensor_bytes.h); not RSS, which mixes in
// the heap's free lists and MPI's buffers. A stage's peak in a step = the
// most bytes alive at once during train_step, less those alive when it
// began (the stage's parameters and their gradients, the batch): what the
// schedule makes the stage hold. Reported: the highest over the timed steps
// (a fresh Pipeline per schedule and M, after one untimed step that makes
// the gradients). The model is S layers Linear(width, width), one per stage,
// so every boundary tensor (an activation between stages or its gradient)
// has rows x width floats; the figures are also given in those units.
//
// Prints one JSON object on rank 0 (and writes it to --json).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "chorus/torch.h"
#include "support/cpu_tensor_bytes.h"

namespace po = boost::program_options;
namespace ct = chorus::torch;

namespace {

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoi(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description description("chorus_pipeline_memory_bench options");
  description.add_options()("help,h", "print this help")(
      "micro-batches", po::value<std::string>()->default_value("8,16"), "M values, comma-separated")(
      "schedules", po::value<std::string>()->default_value("gpipe,1f1b"), "gpipe, 1f1b or both")(
      "width", po::value<int64_t>()->default_value(256), "features of every layer")(
      "rows", po::value<int64_t>()->default_value(1024), "rows of one micro-batch")(
      "steps", po::value<int>()->default_value(3), "timed steps per configuration")(
      "json", po::value<std::string>(), "write the results here (rank 0)");
  po::variables_map values;
  try {
    po::store(po::parse_command_line(argc, argv, description), values);
    po::notify(values);
  } catch (const po::error& e) {
    std::cerr << "chorus_pipeline_memory_bench: " << e.what() << "\n" << description;
    return 2;
  }
  if (values.count("help")) {
    std::cout << description;
    return 0;
  }
  const int64_t width = values["width"].as<int64_t>();
  const int64_t rows = values["rows"].as<int64_t>();
  const int steps = values["steps"].as<int>();
  if (width < 1 || rows < 1 || steps < 1) {
    std::cerr << "chorus_pipeline_memory_bench: --width, --rows and --steps must be positive\n";
    return 2;
  }
  auto& bytes = chorus_test::CpuTensorBytes::install();  // before any thread allocates

  chorus::init();
  torch::set_num_threads(1);
  const int S = chorus::size();
  // Asked once: after rank 0's shutdown the others' runtime refuses calls.
  const int rank = chorus::rank();
  const auto layout = ct::PipelineLayout::make(S, rank, S);
  const int64_t boundary_bytes = rows * width * static_cast<int64_t>(sizeof(float));
  const int64_t parameter_bytes = (width * width + width) * static_cast<int64_t>(sizeof(float));
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  const std::string schedules = values["schedules"].as<std::string>();
  for (const char* schedule_name : {"gpipe", "1f1b"}) {
    if (schedules.find(schedule_name) == std::string::npos) continue;
    for (int M : parse_list(values["micro-batches"].as<std::string>())) {
      torch::manual_seed(5);
      torch::nn::Sequential model;
      for (int s = 0; s < S; ++s) model->push_back(torch::nn::Linear(width, width));
      ct::PipelineOptions options;
      options.micro_batches = M;
      options.schedule = ct::parse_pipeline_schedule(schedule_name);
      options.name = std::string("mem.") + schedule_name + "." + std::to_string(M);
      ct::Pipeline pipeline(model, layout, options, ct::make_chorus_stage_link());
      const auto input = torch::randn({M * rows, width});
      const auto target = torch::randn({M * rows, width});
      const auto mse = [](const torch::Tensor& out, const torch::Tensor& y) {
        return torch::mse_loss(out, y);
      };
      int64_t peak = 0;
      for (int step = 0; step <= steps; ++step) {
        chorus::barrier();
        bytes.reset_peak();
        const int64_t before = bytes.live();
        pipeline.train_step(input, target, mse);
        if (step > 0) peak = std::max(peak, bytes.peak() - before);
      }
      const auto peaks = ct::allgather(torch::tensor({peak}, torch::kInt64), options.name + ".peak");
      if (rank == 0) {
        std::vector<int64_t> stage_peaks(peaks.data_ptr<int64_t>(), peaks.data_ptr<int64_t>() + S);
        results.push_back(nlohmann::ordered_json{{"schedule", schedule_name},
                                                 {"stages", S},
                                                 {"micro_batches", M},
                                                 {"stage_peak_bytes", stage_peaks}});
        std::cerr << schedule_name << " S=" << S << " M=" << M << ": peak per stage (boundary tensors)";
        for (int64_t p : stage_peaks) std::cerr << " " << static_cast<double>(p) / boundary_bytes;
        std::cerr << "\n";
      }
    }
  }
  if (rank == 0) {
    const nlohmann::ordered_json json{{"benchmark", "pipeline_memory"},
                                      {"stages", S},
                                      {"width", width},
                                      {"rows", rows},
                                      {"boundary_bytes", boundary_bytes},
                                      {"stage_parameter_bytes", parameter_bytes},
                                      {"steps", steps},
                                      {"results", std::move(results)}};
    const std::string text = json.dump(2) + "\n";
    std::cout << text;
    if (values.count("json")) std::ofstream(values["json"].as<std::string>()) << text;
  }
  chorus::shutdown();
  return 0;
}
