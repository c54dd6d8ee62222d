#include "reports/report_protocol.h"

#include <cstring>
#include <iomanip>
#include <sstream>

namespace chorus::launcher {

std::string format_hello(const std::string& token, int rank, long pid, const std::string& host) {
  return "hello " + token + " " + std::to_string(rank) + " " + std::to_string(pid) + " " + host + "\n";
}

std::string format_exit(const std::string& token, const RankExit& exit) {
  std::ostringstream out;
  out << "exit " << token << " " << exit.rank << (exit.signaled ? " signal " : " code ") << exit.value << " "
      << std::fixed << std::setprecision(3) << exit.seconds << " " << (exit.orphaned ? 2 : exit.stopped ? 1 : 0) << "\n";
  return out.str();
}

std::string format_lost(const std::string& token, const LostReport& lost) {
  return "lost " + token + " " + std::to_string(lost.reporter) + " " + std::to_string(lost.rank) + " " + lost.host +
         "\n";
}

std::string format_hosts_changed(const std::string& token) { return "hosts-changed " + token + "\n"; }

bool is_hosts_changed(const std::string& line, const std::string& token) { return line == "hosts-changed " + token; }

std::optional<ReportMessage> parse_report(const std::string& line) {
  std::istringstream in(line);
  std::string kind;
  ReportMessage message;
  if (!(in >> kind >> message.token >> message.rank) || message.rank < 0) return std::nullopt;
  if (kind == "hello") {
    message.kind = ReportMessage::Kind::kHello;
    if (!(in >> message.pid >> message.host)) return std::nullopt;
  } else if (kind == "init") {
    message.kind = ReportMessage::Kind::kInit;
  } else if (kind == "lost") {
    message.kind = ReportMessage::Kind::kLost;
    message.lost.reporter = message.rank;
    if (!(in >> message.lost.rank >> message.lost.host) || message.lost.rank < 0) return std::nullopt;
  } else if (kind == "exit") {
    message.kind = ReportMessage::Kind::kExit;
    std::string how;
    int stopped = 0;
    if (!(in >> how >> message.exit.value >> message.exit.seconds >> stopped)) return std::nullopt;
    if (how != "code" && how != "signal") return std::nullopt;
    message.exit.signaled = how == "signal";
    if (stopped < 0 || stopped > 2) return std::nullopt;
    message.exit.stopped = stopped == 1;
    message.exit.orphaned = stopped == 2;
    message.exit.rank = message.rank;
  } else {
    return std::nullopt;
  }
  std::string rest;
  if (in >> rest) return std::nullopt;
  return message;
}

std::string signal_name(int signal_number) {
  const char* abbreviation = sigabbrev_np(signal_number);
  if (abbreviation == nullptr) return "signal " + std::to_string(signal_number);
  return std::string("SIG") + abbreviation;
}

}  // namespace chorus::launcher
