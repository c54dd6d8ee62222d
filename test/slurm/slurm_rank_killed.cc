// One rank of a job kills itself (SIGKILL, as the OOM killer would) while
// the others keep allreducing: the job must end with an error instead of
// hanging. test/slurm/srun_rank_killed_test.sh runs it under srun and checks
// how the step ends; this program only makes the failure happen.
//
//   srun -N2 -n4 --mpi=pmix slurm_rank_killed --victim 1
//
// Output, for the driver: every rank prints "rank R: warm-up ok" after a
// checked allreduce; the victim prints "rank R: killing itself"; a survivor
// that sees its allreduce fail prints "rank R: allreduce failed: ...", and
// one that (wrongly) completes every round prints "rank R: all rounds done".
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "chorus/chorus.h"

namespace {

namespace po = boost::program_options;

struct Options {
  int victim = 1;
  int rounds = 100000;
  int wait_seconds = 120;
};

bool parse(int argc, char** argv, Options* out) {
  po::options_description options("slurm_rank_killed options");
  options.add_options()("help", "print this help")(
      "victim", po::value<int>(&out->victim)->default_value(out->victim), "rank that kills itself")(
      "rounds", po::value<int>(&out->rounds)->default_value(out->rounds),
      "allreduces the survivors attempt after the kill")(
      "wait-seconds", po::value<int>(&out->wait_seconds)->default_value(out->wait_seconds),
      "how long a survivor waits for one allreduce before reporting it stuck");
  po::variables_map values;
  try {
    po::store(po::parse_command_line(argc, argv, options), values);
    po::notify(values);
  } catch (const po::error& e) {
    std::cerr << "slurm_rank_killed: " << e.what() << "\n" << options;
    return false;
  }
  if (values.count("help")) {
    std::cout << options;
    std::exit(0);
  }
  if (out->victim < 0 || out->rounds < 1 || out->wait_seconds < 1) {
    std::cerr << "slurm_rank_killed: --victim must be >= 0, --rounds and --wait-seconds >= 1\n";
    return false;
  }
  return true;
}

// Sum-allreduces `values` in place; false (after printing why) on error.
bool allreduce(const char* name, std::vector<float>* values, int wait_seconds) {
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  try {
    chorus::Handle h = chorus::allreduce_async(
        name, chorus::Tensor(values->data(), chorus::DataType::kFloat32, {int64_t(values->size())}),
        sum);
    if (!h.wait_for(std::chrono::seconds(wait_seconds))) {
      std::printf("rank %d: allreduce '%s' still pending after %d s\n", chorus::rank(), name,
                  wait_seconds);
      return false;
    }
  } catch (const chorus::Error& e) {
    std::printf("rank %d: allreduce failed: %s\n", chorus::rank(), e.what());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, &options)) return 2;
  chorus::init();
  const int rank = chorus::rank();
  const int size = chorus::size();
  if (options.victim >= size) {
    std::fprintf(stderr, "slurm_rank_killed: --victim %d is not a rank of this %d-rank job\n",
                 options.victim, size);
    return 2;
  }

  std::vector<float> values(1024, static_cast<float>(rank + 1));
  if (!allreduce("killed.warmup", &values, options.wait_seconds)) return 3;
  const float want = static_cast<float>(size * (size + 1) / 2);
  for (float v : values) {
    if (v != want) {
      std::printf("rank %d: warm-up sum is %g, expected %g\n", rank, v, want);
      return 3;
    }
  }
  std::printf("rank %d: warm-up ok\n", rank);
  std::fflush(stdout);

  if (rank == options.victim) {
    std::printf("rank %d: killing itself\n", rank);
    std::fflush(stdout);
    std::raise(SIGKILL);
  }
  for (int round = 0; round < options.rounds; ++round) {
    std::fill(values.begin(), values.end(), 1.0f);
    if (!allreduce("killed.step", &values, options.wait_seconds)) {
      std::fflush(stdout);
      return 4;
    }
  }
  std::printf("rank %d: all rounds done\n", rank);
  chorus::shutdown();
  return 0;
}
