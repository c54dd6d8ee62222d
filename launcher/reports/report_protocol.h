// The lines ranks send to chorusrun's report listener, one TCP connection
// each, text, newline-terminated:
//   hello <token> <rank> <pid> <host>          the rank wrapper started the program
//   exit <token> <rank> code <n> <seconds> <stopped>
//   exit <token> <rank> signal <n> <seconds> <stopped>
//                                              the program ended; <stopped> is 1 when the
//                                              wrapper had been told to stop it (so the
//                                              failure is a consequence, not a cause), 2
//                                              when it stopped it because its own parent
//                                              (the host's slurmstepd or orted) died
//   init <token> <rank>                        the program reached chorus::init()
//                                              (sent by core/base/launcher_rendezvous.cc)
//   lost <token> <rank> <lost rank> <host>     rank's runtime saw <lost rank> stop answering
//                                              (its heartbeat, or the local peer watch);
//                                              <host> is the lost rank's host as
//                                              chorus::elastic_host_name names it (the Slurm
//                                              node under Slurm). Sent before the job is
//                                              aborted, so that chorusrun --elastic can blame
//                                              that host alone when every rank then vanishes
//                                              (core/base/launcher_rendezvous.cc)
// and the one line chorusrun sends back, on the wrappers' connections:
//   hosts-changed <token>                      (--elastic) more hosts are available: the
//                                              wrapper creates the rank's notice file
//                                              (CHORUS_ELASTIC_NOTICE), and the ranks stop at
//                                              their next commit to be restarted on them
#pragma once

#include <optional>
#include <string>

namespace chorus::launcher {

struct RankExit {
  int rank = -1;
  bool signaled = false;  // value is a signal number, else an exit code
  int value = 0;
  double seconds = 0.0;   // how long the program ran
  bool stopped = false;   // the wrapper was told to stop it first
  // The wrapper's parent, this host's launcher daemon (slurmstepd, orted),
  // died first: the wrapper stopped the program because its host was lost
  // to the launcher (a cause, unlike `stopped`).
  bool orphaned = false;
  std::string host;       // filled in by the launcher from the hello
  bool ok() const { return !signaled && value == 0; }
};

// A survivor's word that another rank was lost (the `lost` line).
struct LostReport {
  int reporter = -1;
  int rank = -1;     // the rank lost
  std::string host;  // its host, as the reporter's runtime named it
};

struct ReportMessage {
  enum class Kind { kHello, kInit, kExit, kLost } kind = Kind::kHello;
  std::string token;
  int rank = -1;
  long pid = 0;
  std::string host;
  RankExit exit;
  LostReport lost;  // kLost
};

std::string format_hello(const std::string& token, int rank, long pid, const std::string& host);
std::string format_exit(const std::string& token, const RankExit& exit);
std::string format_lost(const std::string& token, const LostReport& lost);
std::string format_hosts_changed(const std::string& token);
// True when `line` (without its newline) is format_hosts_changed(token).
bool is_hosts_changed(const std::string& line, const std::string& token);
// nullopt for a line that is not one of the above.
std::optional<ReportMessage> parse_report(const std::string& line);

// "SIGKILL", or "signal 70" for a number without a name.
std::string signal_name(int signal_number);

}  // namespace chorus::launcher
