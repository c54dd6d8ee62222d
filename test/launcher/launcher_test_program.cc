// The program chorusrun's integration tests launch. One mode per scenario:
//   allreduce            every rank adds rank+1; prints its host and the sum it got
//   exit RANK CODE       RANK exits with CODE after init(); the others wait
//   kill RANK            RANK kills itself with SIGKILL after init(); the others wait
//   no-init RANK         RANK never calls init(); the others do and wait
//   wait DIR             every rank calls init(), writes DIR/ready.<rank>, waits
//   init-shutdown        init() and shutdown() only (launch overhead)
// "Waits" means blocked in pause() until a signal ends the process.
#include <signal.h>
#include <unistd.h>

#include <chorus/chorus.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

[[noreturn]] void wait_forever() {
  while (true) pause();
}

int usage() {
  std::fprintf(stderr, "usage: launcher_test_program allreduce|exit R C|kill R|no-init R|wait DIR|init-shutdown\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  if (mode == "init-shutdown") {
    chorus::init();
    chorus::shutdown();
    return 0;
  }
  if (mode == "no-init") {
    if (argc < 3) return usage();
    // The rank chorusrun's wrapper gave this process; init() is not called.
    const char* rank = std::getenv("CHORUS_LAUNCHER_RANK");
    if (rank != nullptr && std::atoi(rank) == std::atoi(argv[2])) wait_forever();
    chorus::init();
    wait_forever();
  }
  chorus::init();
  const int rank = chorus::rank(), size = chorus::size();
  if (mode == "allreduce") {
    int64_t value = rank + 1;
    chorus::AllreduceOptions sum;
    sum.op = chorus::ReduceOp::kSum;
    chorus::allreduce("launcher.test.sum", chorus::Tensor(&value, chorus::DataType::kInt64, {1}), sum);
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    std::printf("rank %d of %d on %s: allreduce sum %lld\n", rank, size, host, static_cast<long long>(value));
    std::fflush(stdout);
    chorus::shutdown();
    return 0;
  }
  if (mode == "exit" && argc >= 4) {
    if (rank == std::atoi(argv[2])) _exit(std::atoi(argv[3]));
    wait_forever();
  }
  if (mode == "kill" && argc >= 3) {
    if (rank == std::atoi(argv[2])) raise(SIGKILL);
    wait_forever();
  }
  if (mode == "wait" && argc >= 3) {
    std::ofstream(std::string(argv[2]) + "/ready." + std::to_string(rank)) << getpid() << "\n";
    wait_forever();
  }
  return usage();
}
