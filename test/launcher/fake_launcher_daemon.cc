// Stands in for a host's launcher daemon (orted, slurmstepd) in
// rank_wrapper_test. Like orted it starts the rank wrapper from a thread
// other than its main one: the wrapper's parent-death signal is tied to that
// thread, not to the process. On SIGUSR1 it
//   dies    lets that thread end and the process end 0.2 s later, as a daemon
//           being killed does: the signal reaches the wrapper while
//           getppid() still names this process
//   stops   SIGTERMs the wrapper and waits for it, as a daemon stopping its
//           job's ranks does
// usage: fake_launcher_daemon dies|stops -- COMMAND [ARGS...]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (argc < 4 || (mode != "dies" && mode != "stops") || std::strcmp(argv[2], "--") != 0) {
    std::fprintf(stderr, "usage: fake_launcher_daemon dies|stops -- COMMAND [ARGS...]\n");
    return 2;
  }
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);  // for sigwait, in every thread
  int status = 0;
  std::thread starter([&] {
    const pid_t child = fork();
    if (child == 0) {
      pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr);
      execv(argv[3], argv + 3);
      _exit(127);
    }
    int got = 0;
    sigwait(&usr1, &got);
    if (mode == "stops") {
      kill(child, SIGTERM);
      while (waitpid(child, &status, 0) < 0) {
      }
    }
  });
  starter.join();
  if (mode == "dies") usleep(200 * 1000);
  return 0;
}
