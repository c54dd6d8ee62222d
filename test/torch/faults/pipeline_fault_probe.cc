// pipeline_fault_probe <token>: a 3-stage pipeline (np 3) whose middle stage
// (rank 1) is SIGKILLed in the middle of step 2, between the forwards of its
// micro-batches. The survivors (stages 0 and 2, each waiting on a message
// from it) must fail with an error that names stage 1 and rank 1; each
// prints "PIPELINE_FAULT_SURVIVOR rank=<r> error=<message>", and once both
// have, rank 0 ends the job with MPI_Abort (a non-zero status), as a
// training program that cannot go on would (run_pipeline_fault_test.sh
// checks it all). <token> only marks the processes for the driver.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include <mpi.h>
#include <torch/torch.h>

#include "chorus/torch.h"

namespace ct = chorus::torch;

int main(int argc, char** /*argv*/) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: pipeline_fault_probe <token>\n");
    return 2;
  }
  chorus::init();
  torch::set_num_threads(1);
  const int rank = chorus::rank();
  const auto layout = ct::PipelineLayout::make(chorus::size(), rank, 3);
  // The survivors meet once they have reported, before the job is ended.
  const int victim = 1;
  MPI_Comm survivors = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank == victim ? MPI_UNDEFINED : 0, rank, &survivors);
  int64_t step = 0;
  int forwards_in_step = 0;
  // The middle layer (stage 1) dies in step 2 after one micro-batch's forward.
  auto killer = torch::nn::Functional([&](torch::Tensor x) {
    if (step == 2 && ++forwards_in_step == 2) raise(SIGKILL);
    return x;
  });
  torch::manual_seed(3);
  auto model = torch::nn::Sequential(torch::nn::Linear(4, 8), killer, torch::nn::Linear(8, 2));
  ct::PipelineOptions options;
  options.micro_batches = 4;
  options.schedule = ct::PipelineSchedule::k1F1B;
  ct::Pipeline pipeline(model, layout, options, ct::make_chorus_stage_link());
  torch::optim::SGD sgd(pipeline.part()->parameters(), torch::optim::SGDOptions(0.1));
  const auto mse = [](const torch::Tensor& out, const torch::Tensor& y) {
    return torch::mse_loss(out, y);
  };
  try {
    for (; step < 5; ++step) {
      sgd.zero_grad();
      pipeline.train_step(torch::randn({8, 4}), torch::randn({8, 2}), mse);
      sgd.step();
    }
    std::printf("PIPELINE_FAULT_NO_ERROR rank=%d\n", rank);
  } catch (const std::exception& e) {
    std::string message = e.what();
    for (char& c : message) {
      if (c == '\n') c = ' ';
    }
    std::printf("PIPELINE_FAULT_SURVIVOR rank=%d error=%s\n", rank, message.c_str());
  }
  std::fflush(stdout);
  MPI_Barrier(survivors);
  // MPI_Finalize would wait for the dead rank: end the job with an error.
  if (rank == 0) MPI_Abort(MPI_COMM_WORLD, 1);
  pause();  // until the abort reaches this rank
  _exit(1);
}
