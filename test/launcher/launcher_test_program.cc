// The program chorusrun's integration tests launch. One mode per scenario:
//   allreduce            every rank adds rank+1; prints its host and the sum it got
//   exit RANK CODE       RANK exits with CODE after init(); the others wait
//   kill RANK            RANK kills itself with SIGKILL after init(); the others wait
//   abort-after-kill RANK DIR
//                        RANK writes its pid to DIR/victim.pid and kills itself with
//                        SIGKILL after init(), its wrapper's report held back 0.8 s;
//                        once it is gone rank 0 exits with the runtime's job-abort code
//                        (as a survivor that saw RANK die); the others wait
//   no-init RANK         RANK never calls init(); the others do and wait
//   wait DIR             every rank calls init(), writes DIR/ready.<rank>, waits
//   init-shutdown        init() and shutdown() only (launch overhead)
// "Waits" means blocked in pause() until a signal ends the process.
#include <signal.h>
#include <time.h>
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
  std::fprintf(stderr, "usage: launcher_test_program allreduce|exit R C|kill R|abort-after-kill R DIR|no-init R|wait DIR|init-shutdown\n");
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
  if (mode == "abort-after-kill" && argc >= 4) {
    const std::string pid_file = std::string(argv[3]) + "/victim.pid";
    const timespec tick{0, 10'000'000};
    if (rank == std::atoi(argv[2])) {
      // A child in a session of its own keeps this rank's output pipes open
      // after the kill, so its wrapper reports the kill only when the child
      // ends (0.8 s later, within the wrapper's 1 s for output after an
      // exit): the survivor's exit below reaches chorusrun first.
      if (fork() == 0) {
        setsid();
        const timespec hold{0, 800'000'000};
        nanosleep(&hold, nullptr);
        _exit(0);
      }
      std::ofstream(pid_file + ".tmp") << getpid() << "\n";
      std::rename((pid_file + ".tmp").c_str(), pid_file.c_str());
      raise(SIGKILL);
    }
    if (rank == 0) {
      // Once the victim is gone (reaped by its wrapper), exit as a survivor
      // whose runtime saw it die and ended the job.
      long victim = 0;
      while (!(std::ifstream(pid_file) >> victim)) nanosleep(&tick, nullptr);
      while (kill(static_cast<pid_t>(victim), 0) == 0) nanosleep(&tick, nullptr);
      _exit(70);  // kJobAbortExitCode (base/launcher_rendezvous.h)
    }
    wait_forever();
  }
  if (mode == "wait" && argc >= 3) {
    std::ofstream(std::string(argv[2]) + "/ready." + std::to_string(rank)) << getpid() << "\n";
    wait_forever();
  }
  return usage();
}
