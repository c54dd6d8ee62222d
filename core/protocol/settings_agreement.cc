#include "protocol/settings_agreement.h"

#include <sstream>

namespace chorus {
namespace {

// A rank's report: "ok" or "bad", then one value per alike setting.
std::string report_of(const Status& local, const std::vector<AlikeSetting>& settings) {
  std::ostringstream out;
  out << (local.ok() ? "ok" : "bad");
  for (const AlikeSetting& s : settings) out << ' ' << s.value;
  return out.str();
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return "[" + text + "]";
}

// Rank 0's verdict, one line each: "start <ranks that could not start>" or,
// for each alike setting some rank differs on, "<index> <rank 0's value>
// <ranks>". Empty when all agree.
std::string verdict_of(const std::vector<std::string>& reports, size_t settings) {
  std::vector<bool> could_start(reports.size());
  std::vector<std::vector<int64_t>> values(reports.size(), std::vector<int64_t>(settings, 0));
  for (size_t r = 0; r < reports.size(); ++r) {
    std::istringstream in(reports[r]);
    std::string state;
    in >> state;
    could_start[r] = state == "ok";
    for (size_t i = 0; i < settings; ++i) {
      if (!(in >> values[r][i])) could_start[r] = false;  // a corrupt report counts as a failed start
    }
  }
  std::ostringstream verdict;
  std::vector<int> failed;
  for (size_t r = 0; r < reports.size(); ++r) {
    if (!could_start[r]) failed.push_back(static_cast<int>(r));
  }
  if (!failed.empty()) {
    verdict << "start";
    for (int r : failed) verdict << ' ' << r;
    return verdict.str();
  }
  for (size_t i = 0; i < settings; ++i) {
    std::vector<int> differ;
    for (size_t r = 1; r < reports.size(); ++r) {
      if (values[r][i] != values[0][i]) differ.push_back(static_cast<int>(r));
    }
    if (differ.empty()) continue;
    verdict << i << ' ' << values[0][i];
    for (int r : differ) verdict << ' ' << r;
    verdict << '\n';
  }
  return verdict.str();
}

}  // namespace

std::vector<AlikeSetting> alike_settings(const Config& config) {
  std::vector<AlikeSetting> alike;
  for (const Setting& setting : settings()) {
    if (setting.agreement == Agreement::kAlike) alike.push_back({setting.variable, setting.agreed(config), &setting});
  }
  return alike;
}

Status agree_on_settings(ControllerTransport* transport, const Status& local, const Config& config) {
  const std::vector<AlikeSetting> mine = alike_settings(config);
  std::vector<std::string> reports;
  CHORUS_RETURN_IF_ERROR(transport->gather_to_coordinator(report_of(local, mine), &reports));
  std::string verdict;
  if (transport->rank() == 0) verdict = verdict_of(reports, mine.size());
  CHORUS_RETURN_IF_ERROR(transport->broadcast_from_coordinator(&verdict));
  if (!local.ok()) return local;
  if (verdict.empty()) return Status::OK();

  std::istringstream lines(verdict);
  std::string word;
  lines >> word;
  if (word == "start") {
    std::vector<int> failed;
    for (int r; lines >> r;) failed.push_back(r);
    return Status::Aborted("Chorus could not start on rank(s) " + ranks_text(failed) +
                           "; their own error says why, so this rank does not start either");
  }
  // The first setting some rank differs on speaks for all of them.
  lines.clear();
  lines.str(verdict);
  size_t index = 0;
  int64_t coordinators = 0;
  lines >> index >> coordinators;
  std::vector<int> differ;
  std::string rest;
  std::getline(lines, rest);
  std::istringstream ranks(rest);
  for (int r; ranks >> r;) differ.push_back(r);
  const AlikeSetting& setting = mine.at(index);
  for (int r : differ) {
    if (r != transport->rank()) continue;
    return Status::InvalidArgument(std::string(setting.variable) + " must be the same on every rank: rank " +
                                   std::to_string(r) + " has " + setting.row->spell_agreed(setting.value) +
                                   ", rank 0 has " + setting.row->spell_agreed(coordinators));
  }
  return Status::Aborted(std::string("Chorus has ") + setting.variable + " different from rank 0 on rank(s) " +
                         ranks_text(differ) + "; every rank must hold the same value, so none starts");
}

}  // namespace chorus
