// chorus_train_bench: training throughput of an MLP on synthetic data, the
// Chorus side of test/bench/training/run_training_bench.sh.
//   --mode local   one process, no communication (two of them side by side
//                  are the ceiling a data-parallel job cannot beat here)
//   --mode chorus  under mpirun: DistributedOptimizer, gradients allreduced
//   --mode sync    under mpirun: local training, no gradients exchanged, one
//                  MPI_Barrier per step: the bound any synchronous
//                  data-parallel step meets here, as every step then lasts
//                  as long as the slowest rank's (without Chorus at all)
//   --mode mpi     under mpirun: data parallel written by hand, without
//                  Chorus: after backward the training thread copies the
//                  gradients into one buffer, MPI_Allreduce sums it in
//                  place, and it divides and copies back (no overlap, no
//                  background thread): what a job pays for the exchange
//                  itself on this machine's Open MPI
// Prints one JSON line on rank 0: global samples per second over the timed
// steps. The model, optimizer (Adam), batch and data match ddp_baseline.py.
// --phase-times: each rank also prints (stderr) the median, mean and 90th
// percentile of each phase of its timed steps: forward (with zero_grad and the loss), backward,
// synchronize (chorus: the DistributedOptimizer's synchronize(), the
// optimizer step then skipping it; sync: the barrier; mpi: the allreduce
// with its copies) and the optimizer step.
// Where a step's time goes, e.g. which rank waits for which.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <mpi.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "chorus/torch.h"

namespace po = boost::program_options;

namespace {

std::vector<int64_t> parse_layers(const std::string& text) {
  std::vector<int64_t> layers;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, '-')) {
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || value <= 0) {
      throw std::invalid_argument("--layers: '" + item + "' in '" + text +
                                  "' is not a positive layer width (expected e.g. 784-128-10)");
    }
    layers.push_back(value);
  }
  if (layers.size() < 2) throw std::invalid_argument("--layers needs at least two widths, got '" + text + "'");
  return layers;
}

torch::nn::Sequential make_mlp(const std::vector<int64_t>& layers) {
  torch::nn::Sequential net;
  for (size_t i = 0; i + 1 < layers.size(); ++i) {
    net->push_back(torch::nn::Linear(layers[i], layers[i + 1]));
    if (i + 2 < layers.size()) net->push_back(torch::nn::ReLU());
  }
  return net;
}

// Per-phase durations of the timed steps.
class PhaseTimes {
 public:
  static constexpr const char* kNames[] = {"forward", "backward", "synchronize", "optimizer"};
  using Clock = std::chrono::steady_clock;

  void record(const std::array<Clock::time_point, 5>& marks) {
    for (size_t i = 0; i < samples_.size(); ++i) {
      samples_[i].push_back(std::chrono::duration<double, std::micro>(marks[i + 1] - marks[i]).count());
    }
  }
  std::string summary() const {
    std::string out;
    for (size_t i = 0; i < samples_.size(); ++i) {
      std::vector<double> sorted = samples_[i];
      std::sort(sorted.begin(), sorted.end());
      const double median = sorted.empty() ? 0.0 : sorted[sorted.size() / 2];
      double sum = 0;
      for (double v : sorted) sum += v;
      const double mean = sorted.empty() ? 0.0 : sum / static_cast<double>(sorted.size());
      const double p90 = sorted.empty() ? 0.0 : sorted[sorted.size() * 9 / 10];
      char text[96];
      std::snprintf(text, sizeof(text), "%s%s %.1f/%.1f/%.1f", i ? ", " : "", kNames[i], median, mean, p90);
      out += text;
    }
    return out;
  }

 private:
  std::array<std::vector<double>, 4> samples_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string mode, layers_text;
  int64_t batch = 64, warmup = 0, steps = 0;
  bool phase_times = false;
  po::options_description desc("chorus_train_bench options");
  desc.add_options()("help,h", "this help")(
      "mode", po::value(&mode)->default_value("chorus"), "local | chorus | sync | mpi")(
      "layers", po::value(&layers_text)->default_value("784-128-10"), "MLP widths")(
      "batch-size", po::value(&batch)->default_value(64), "samples per rank per step")(
      "warmup-steps", po::value(&warmup)->default_value(20), "untimed steps first")(
      "steps", po::value(&steps)->default_value(200), "timed steps")(
      "phase-times", po::bool_switch(&phase_times), "print each rank's median time per phase (stderr)");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return 0;
    }
    po::notify(vm);
    if (mode != "local" && mode != "chorus" && mode != "sync" && mode != "mpi") {
      throw std::invalid_argument("--mode must be 'local', 'chorus', 'sync' or 'mpi', got '" + mode + "'");
    }
    if (batch <= 0 || warmup < 0 || steps <= 0) {
      throw std::invalid_argument("--batch-size and --steps must be > 0, --warmup-steps >= 0");
    }
    const std::vector<int64_t> layers = parse_layers(layers_text);
    torch::set_num_threads(1);
    const bool distributed = mode == "chorus";
    const bool sync_only = mode == "sync";
    const bool bare_mpi = mode == "mpi";
    const bool uses_mpi = sync_only || bare_mpi;
    int rank = 0, size = 1;
    if (distributed) {
      chorus::init();
      rank = chorus::rank();
      size = chorus::size();
    } else if (uses_mpi) {
      MPI_Init(&argc, &argv);
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      MPI_Comm_size(MPI_COMM_WORLD, &size);
    }

    torch::manual_seed(1234);
    auto model = make_mlp(layers);
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
    std::unique_ptr<chorus::torch::DistributedOptimizer> distributed_optimizer;
    if (distributed) {
      chorus::torch::broadcast_parameters(*model, 0);
      distributed_optimizer =
          std::make_unique<chorus::torch::DistributedOptimizer>(adam, model->named_parameters());
    }
    // A fixed pool of synthetic batches (different per rank), cycled.
    torch::manual_seed(99 + rank);
    const int64_t pool = 8;
    auto inputs = torch::randn({pool, batch, layers.front()});
    auto labels = torch::randint(layers.back(), {pool, batch}, torch::kLong);

    // --mode mpi: the gradients' flat buffer, and views of its pieces.
    torch::Tensor flat;
    std::vector<torch::Tensor> pieces;
    auto allreduce_by_hand = [&] {
      if (!flat.defined()) {
        int64_t total = 0;
        for (const auto& p : model->parameters()) total += p.numel();
        if (total > std::numeric_limits<int>::max()) {
          throw std::invalid_argument("--mode mpi sums all gradients in one MPI_Allreduce of at most " +
                                      std::to_string(std::numeric_limits<int>::max()) + " floats; --layers " +
                                      layers_text + " has " + std::to_string(total) + " parameters");
        }
        flat = torch::empty({total});
        int64_t at = 0;
        for (const auto& p : model->parameters()) {
          pieces.push_back(flat.narrow(0, at, p.numel()).view(p.sizes()));
          at += p.numel();
        }
      }
      const auto params = model->parameters();
      for (size_t i = 0; i < params.size(); ++i) pieces[i].copy_(params[i].grad());
      MPI_Allreduce(MPI_IN_PLACE, flat.data_ptr<float>(), static_cast<int>(flat.numel()), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      flat.div_(size);
      for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad().copy_(pieces[i]);
    };

    PhaseTimes phases;
    auto train_step = [&](int64_t step) {
      const int64_t b = step % pool;
      const bool timed = phase_times && step >= warmup;
      std::array<PhaseTimes::Clock::time_point, 5> marks;
      auto mark = [&](size_t i) {
        if (timed) marks[i] = PhaseTimes::Clock::now();
      };
      mark(0);
      if (distributed_optimizer) distributed_optimizer->zero_grad(); else adam.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(model->forward(inputs[b]), labels[b]);
      mark(1);
      loss.backward();
      mark(2);
      // Timed steps wait for the gradients (or the barrier) apart from the
      // optimizer step, to tell the two apart.
      if (timed && distributed_optimizer) distributed_optimizer->synchronize();
      if (timed && sync_only) MPI_Barrier(MPI_COMM_WORLD);
      if (bare_mpi) allreduce_by_hand();
      mark(3);
      if (distributed_optimizer) {
        std::optional<chorus::torch::DistributedOptimizer::SkipSynchronize> already_synchronized;
        if (timed) already_synchronized.emplace(*distributed_optimizer);
        distributed_optimizer->step();
      } else {
        adam.step();
      }
      if (!timed && sync_only) MPI_Barrier(MPI_COMM_WORLD);
      mark(4);
      if (timed) phases.record(marks);
    };
    // All ranks start and stop the clock together.
    auto meet = [&] {
      if (distributed) chorus::barrier();
      if (uses_mpi) MPI_Barrier(MPI_COMM_WORLD);
    };
    for (int64_t s = 0; s < warmup; ++s) train_step(s);
    meet();
    const auto start = std::chrono::steady_clock::now();
    for (int64_t s = 0; s < steps; ++s) train_step(warmup + s);
    meet();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // A data-parallel run whose ranks' parameters drifted apart timed something
    // else than data-parallel training.
    if (distributed || bare_mpi) {
      auto checksum = torch::zeros({1}, torch::kFloat64);
      for (const auto& p : model->parameters()) checksum += p.to(torch::kFloat64).sum();
      torch::Tensor all;
      if (distributed) {
        all = chorus::torch::allgather(checksum, "chorus_train_bench.parameter_checksum");
      } else {
        all = torch::empty({size}, torch::kFloat64);
        MPI_Allgather(checksum.data_ptr<double>(), 1, MPI_DOUBLE, all.data_ptr<double>(), 1, MPI_DOUBLE,
                      MPI_COMM_WORLD);
      }
      const double spread = (all.max() - all.min()).item<double>();
      if (spread > 1e-6 * (1.0 + std::abs(checksum.item<double>()))) {
        std::ostringstream sums;
        sums.precision(17);
        for (int64_t r = 0; r < all.numel(); ++r) sums << (r ? ", " : "") << all[r].item<double>();
        throw std::runtime_error("the ranks' parameters differ after training (their sums by rank: " + sums.str() +
                                 "), so the gradients were not averaged across ranks");
      }
    }
    if (phase_times) {
      std::fprintf(stderr, "chorus_train_bench: rank %d of %d, %s mode, us per phase (median/mean/p90) over %lld steps: %s\n",
                   rank, size, mode.c_str(), static_cast<long long>(steps), phases.summary().c_str());
    }
    int64_t parameters = 0;
    for (const auto& p : model->parameters()) parameters += p.numel();
    if (rank == 0) {
      // One line: the scripts read the last line of the output as the result.
      const nlohmann::ordered_json result{{"mode", mode},
                                          {"np", size},
                                          {"layers", layers_text},
                                          {"parameters", parameters},
                                          {"batch_per_rank", batch},
                                          {"steps", steps},
                                          {"seconds", seconds},
                                          {"samples_per_second", static_cast<double>(batch * steps * size) / seconds}};
      std::printf("%s\n", result.dump().c_str());
      std::fflush(stdout);
    }
    distributed_optimizer.reset();
    if (distributed) chorus::shutdown();
    if (uses_mpi) MPI_Finalize();
  } catch (const std::exception& e) {
    std::cerr << "chorus_train_bench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
