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

std::string mode_name(int64_t mode) { return shm_allreduce_mode_name(static_cast<ShmAllreduceMode>(mode)); }

std::string probe_mode_name(int64_t mode) { return shm_probe_mode_name(static_cast<ShmProbeMode>(mode)); }

std::string gpu_mode_name(int64_t mode) { return gpu_backend_mode_name(static_cast<GpuBackendMode>(mode)); }

std::string milliseconds_as_seconds(int64_t ms) {
  std::ostringstream out;
  out << static_cast<double>(ms) / 1000.0;
  return out.str();
}

std::string spelled(const AlikeSetting& setting, int64_t value) {
  return setting.spell ? setting.spell(value) : std::to_string(value);
}

}  // namespace

std::vector<AlikeSetting> alike_settings(const Config& config) {
  // Each decides what every rank does in a collective (settings_agreement.h).
  return {
      {"CHORUS_AUTOTUNE", config.autotune ? 1 : 0},  // bit-vector length
      {"CHORUS_FUSION_THRESHOLD", config.fusion_threshold_bytes},
      {"CHORUS_CACHE_CAPACITY", config.cache_capacity},  // bit-vector layout
      {"CHORUS_SHM_ALLREDUCE", static_cast<int64_t>(config.shm_allreduce), mode_name},
      {"CHORUS_SHM_ALLREDUCE_THRESHOLD", config.shm_allreduce_threshold_bytes},
      // The probe is a collective: every rank measures or none does.
      {"CHORUS_SHM_PROBE", static_cast<int64_t>(config.effective_shm_probe()), probe_mode_name},
      {"CHORUS_HIERARCHICAL_ALLREDUCE", static_cast<int64_t>(config.hierarchical_allreduce), mode_name},
      // Whether GPU collectives take NCCL or host memory: every rank's must match.
      {"CHORUS_GPU_BACKEND", static_cast<int64_t>(config.gpu_backend), gpu_mode_name},
      // A rank watching with a shorter timeout than its peer beats for would
      // declare it lost while it is well (the interval follows the timeout).
      {"CHORUS_HEARTBEAT_TIMEOUT_SECONDS", static_cast<int64_t>(config.heartbeat_timeout_seconds * 1000.0 + 0.5),
       milliseconds_as_seconds},
  };
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
                                   std::to_string(r) + " has " + spelled(setting, setting.value) +
                                   ", rank 0 has " + spelled(setting, coordinators));
  }
  return Status::Aborted(std::string("Chorus has ") + setting.variable + " different from rank 0 on rank(s) " +
                         ranks_text(differ) + "; every rank must hold the same value, so none starts");
}

}  // namespace chorus
