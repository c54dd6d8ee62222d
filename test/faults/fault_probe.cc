// fault_probe: a job in which one rank fails the others, through the public
// API, for run_fault_test.sh to check from outside: how the survivors hear of
// it, and that the job then ends with nothing left behind.
//
//   fault_probe stall <token>  rank 1 never submits (it is stuck in its own
//                              code, awake); the stall inspector
//                              (CHORUS_STALL_SHUTDOWN_SECONDS) stops the job,
//                              and the survivors' shutdown() must end it
//                              although rank 1 never finalizes.
//   fault_probe kill <token>   the last rank is SIGKILLed while the others
//                              wait with an allreduce in flight (it has been
//                              negotiated once): each must get an error
//                              naming it within a second or two.
//   fault_probe p2p-kill <token>
//                              the last rank is SIGKILLed while every other
//                              rank waits for a point-to-point message from
//                              it: each receive must fail naming it within a
//                              second or two (the runtime itself has nothing
//                              in flight, so only point-to-point's own watch
//                              of its peers can tell).
//   fault_probe heartbeat <token> <victims>
//                              the ranks listed (comma-separated) submit
//                              'hb.victim', the others 'hb.pending', so no
//                              collective can complete; every rank prints
//                              FAULT_READY, then waits. The driver
//                              (run_heartbeat_test.sh) freezes, kills or cuts
//                              off the victims; each rank whose handle then
//                              fails prints FAULT_HEARTBEAT with the error,
//                              the wall-clock time and whether its device's
//                              backend was aborted, then sleeps: the
//                              heartbeat, not the program, must end the job.
//   fault_probe slow <token> <seconds>
//                              the last rank sleeps in its own code for
//                              <seconds> before it joins an allreduce the
//                              others wait in: it must succeed everywhere
//                              (a slow rank is not a lost one).
// <token> only marks the processes, so the driver can find leftovers.
//
// The job also has a device of the test suite's (the asynchronous test
// device), so that the stall shows whether the runtime aborts its devices'
// backends when it stops: a GPU's collective waiting for the stuck rank would
// never finish otherwise.
//
// Lines for the driver: "FAULT_SURVIVOR rank=R ok after=S" (or FAILED: why),
// "FAULT_STALLED rank=1 ok" (its calls throw once the job stopped), and
// "FAULT_SHUTDOWN_RETURNED rank=R" if shutdown() returned after the stall.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus.h"
#include "runtime/init_with_backends.h"
#include "support/async_device/async_test_backend.h"

namespace {

using Clock = std::chrono::steady_clock;

chorus_test::AsyncTestBackend* test_device_backend = nullptr;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The error a collective ended with, or "" when it succeeded; "timeout"
// when it did not end within `limit`.
std::string outcome(const chorus::Handle& handle, std::chrono::seconds limit) {
  try {
    if (!handle.wait_for(limit)) return "timeout";
    return "";
  } catch (const chorus::Error& e) {
    return e.what();
  }
}

void report(int rank, const std::string& failure, double after) {
  std::printf("FAULT_SURVIVOR rank=%d %s%s after=%.3f\n", rank, failure.empty() ? "ok" : "FAILED: ",
              failure.c_str(), after);
  std::fflush(stdout);
}

std::vector<float> data(float value) { return std::vector<float>(64, value); }

chorus::Tensor tensor(std::vector<float>& v) {
  return chorus::Tensor(v.data(), chorus::DataType::kFloat32, {static_cast<int64_t>(v.size())});
}

int stall(int rank) {
  std::vector<float> mine = data(1.0f);
  if (rank == 1) {
    // Stuck in its own code: never submits, but its runtime hears the stop.
    const auto start = Clock::now();
    bool stopped = false;
    while (!stopped && seconds_since(start) < 30) {
      try {
        (void)chorus::size();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      } catch (const chorus::Error&) {
        stopped = true;
      }
    }
    std::printf("FAULT_STALLED rank=1 %s\n", stopped ? "ok" : "FAILED: its runtime did not stop within 30 s");
    std::fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);  // the survivors have reported
    std::this_thread::sleep_for(std::chrono::seconds(600));
    return 0;
  }
  const auto start = Clock::now();
  const std::string error = outcome(chorus::allreduce_async("stall.missing", tensor(mine)), std::chrono::seconds(30));
  const double after = seconds_since(start);
  static const std::regex expected(
      "Stopping after a stall of [0-9.]+ s: allreduce 'stall\\.missing' is waiting for ranks \\[1\\]");
  std::string failure;
  if (error.empty()) failure = "the allreduce succeeded without rank 1";
  else if (error == "timeout") failure = "not stopped within 30 s";
  else if (!std::regex_match(error, expected)) failure = "unexpected error: " + error;
  else if (test_device_backend->aborted_reason().find("Stopping after a stall") == std::string::npos) {
    failure = "the device backend was not aborted with the stall's reason (its reason: '" +
              test_device_backend->aborted_reason() + "')";
  }
  report(rank, failure, after);
  MPI_Barrier(MPI_COMM_WORLD);
  chorus::shutdown();
  std::printf("FAULT_SHUTDOWN_RETURNED rank=%d\n", rank);
  std::fflush(stdout);
  return 0;
}

int kill_last(int rank, int size) {
  std::vector<float> mine = data(static_cast<float>(rank));
  const int victim = size - 1;
  const pid_t victim_pid = [&] {
    int pid = getpid();
    MPI_Bcast(&pid, 1, MPI_INT, victim, MPI_COMM_WORLD);
    return static_cast<pid_t>(pid);
  }();
  // The survivors leave together, once each has reported: one that left
  // early would look dead to the others.
  MPI_Comm survivors = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank == victim ? MPI_UNDEFINED : 0, rank, &survivors);
  chorus::Handle pending;
  if (rank != victim) pending = chorus::allreduce_async("kill.pending", tensor(mine));
  // Long enough for a negotiation cycle to pass, so that the survivors wait
  // between cycles when the victim dies.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  MPI_Barrier(MPI_COMM_WORLD);
  const auto killed = Clock::now();
  if (rank == victim) raise(SIGKILL);
  const std::string error = outcome(pending, std::chrono::seconds(30));
  const double after = seconds_since(killed);
  const std::string expected = "rank " + std::to_string(victim) + " (pid " + std::to_string(victim_pid) +
                               ") exited while rank " + std::to_string(rank) +
                               " was waiting for the next negotiation cycle";
  std::string failure;
  if (error.empty()) failure = "the allreduce succeeded without the dead rank";
  else if (error == "timeout") failure = "no error within 30 s";
  else if (error.find(expected) == std::string::npos) failure = "unexpected error (wanted '" + expected + "'): " + error;
  report(rank, failure, after);
  MPI_Barrier(survivors);
  // The background thread ends the job; under orte_enable_recovery that
  // does not happen, so leave without MPI_Finalize (it would wait for the
  // dead rank).
  _exit(0);
}

int kill_sender(int rank, int size) {
  const int victim = size - 1;
  const pid_t victim_pid = [&] {
    int pid = getpid();
    MPI_Bcast(&pid, 1, MPI_INT, victim, MPI_COMM_WORLD);
    return static_cast<pid_t>(pid);
  }();
  MPI_Comm survivors = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank == victim ? MPI_UNDEFINED : 0, rank, &survivors);
  std::vector<float> into = data(0.0f);
  chorus::Handle pending;
  if (rank != victim) pending = chorus::recv_async("kill.p2p", tensor(into), victim);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto killed = Clock::now();
  if (rank == victim) raise(SIGKILL);
  const std::string error = outcome(pending, std::chrono::seconds(30));
  const double after = seconds_since(killed);
  const std::string expected = "rank " + std::to_string(victim) + " (pid " + std::to_string(victim_pid) +
                               ") exited while rank " + std::to_string(rank) + " had a receive of 'kill.p2p' from rank " +
                               std::to_string(victim) + " in flight";
  std::string failure;
  if (error.empty()) failure = "the receive succeeded without a sender";
  else if (error == "timeout") failure = "no error within 30 s";
  else if (error != expected) failure = "unexpected error (wanted '" + expected + "'): " + error;
  report(rank, failure, after);
  MPI_Barrier(survivors);
  _exit(0);  // as kill_last(): MPI_Finalize would wait for the dead rank
}

double wall_clock_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

int heartbeat(int rank, const std::string& victim_list) {
  bool victim = false;
  std::stringstream list(victim_list);
  for (std::string r; std::getline(list, r, ',');) victim = victim || std::stoi(r) == rank;
  std::vector<float> mine = data(1.0f);
  const chorus::Handle pending = chorus::allreduce_async(victim ? "hb.victim" : "hb.pending", tensor(mine));
  MPI_Barrier(MPI_COMM_WORLD);
  std::printf("FAULT_READY rank=%d pid=%d host=%s\n", rank, static_cast<int>(getpid()), host_name().c_str());
  std::fflush(stdout);
  const std::string error = outcome(pending, std::chrono::seconds(120));
  char line[4096];
  // A device collective waiting for the lost rank would never end: the
  // heartbeat must have aborted the device's backend with the reason.
  const bool device_aborted = test_device_backend->aborted_reason().find("stopped answering") != std::string::npos;
  std::snprintf(line, sizeof line, "FAULT_HEARTBEAT rank=%d role=%s at=%.3f device=%s error=%s\n", rank,
                victim ? "victim" : "survivor", wall_clock_seconds(), device_aborted ? "aborted" : "running",
                error.empty() ? "none: the allreduce succeeded" : error.c_str());
  std::fputs(line, stdout);
  std::fflush(stdout);
  // A rank cut off from the launcher cannot get its output through: it
  // writes the line where the driver looks too (hosts share /tmp here).
  if (const char* dir = std::getenv("FAULT_REPORT_DIR")) {
    if (FILE* file = std::fopen((std::string(dir) + "/rank-" + std::to_string(rank)).c_str(), "w")) {
      std::fputs(line, file);
      std::fclose(file);
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(120));
  return 0;
}

int slow(int rank, int size, double seconds) {
  std::vector<float> mine = data(static_cast<float>(rank + 1));
  if (rank == size - 1) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const auto start = Clock::now();
  const std::string error = outcome(chorus::allreduce_async("slow.step", tensor(mine)), std::chrono::seconds(120));
  const float expected = static_cast<float>(size + 1) / 2.0f;  // the average of 1..size
  std::string failure = error;
  if (error.empty() && mine[0] != expected) failure = "wrong sum " + std::to_string(mine[0]);
  report(rank, failure, seconds_since(start));
  chorus::shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc >= 3 ? argv[1] : "";
  const bool three = mode == "stall" || mode == "kill" || mode == "p2p-kill";
  const bool four = mode == "heartbeat" || mode == "slow";
  if (!(three && argc == 3) && !(four && argc == 4)) {
    std::fprintf(stderr, "usage: fault_probe stall|kill|p2p-kill <token> | heartbeat <token> <victims> | "
                         "slow <token> <seconds>\n");
    return 2;
  }
  chorus::detail::init_with_backends({chorus_test::async_test_backend(std::chrono::microseconds(100), nullptr,
                                                                      &test_device_backend)});
  const int rank = chorus::rank();
  const int size = chorus::size();
  // One collective with everyone first: later failures are not start-up ones.
  std::vector<float> warm = data(1.0f);
  chorus::allreduce("fault.warm", tensor(warm));
  if (mode == "stall") return stall(rank);
  if (mode == "heartbeat") return heartbeat(rank, argv[3]);
  if (mode == "slow") return slow(rank, size, std::stod(argv[3]));
  return mode == "kill" ? kill_last(rank, size) : kill_sender(rank, size);
}
