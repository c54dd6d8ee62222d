// What chorusrun --elastic and an elastic program agree on (the launcher in
// launcher/elastic/, the program through chorus::torch::ElasticState):
// the variables chorusrun gives every rank and the exit status with which
// ranks ask to be restarted. See docs/DESIGN.md, "Elastic training".
#pragma once

#include <string>

namespace chorus {

// Identifies the elastic job across its restarts (the same value in every
// attempt), so a rank resumes only from commits of its own job.
inline constexpr const char* kElasticJobVariable = "CHORUS_ELASTIC_JOB";
// How many times chorusrun has restarted the job (0 on the first attempt).
inline constexpr const char* kElasticRestartVariable = "CHORUS_ELASTIC_RESTART";
// A file on the rank's own host that chorusrun's rank wrapper creates when
// the set of hosts changed (more are available): the ranks stop at their
// next commit and chorusrun restarts them on the new hosts.
inline constexpr const char* kElasticNoticeVariable = "CHORUS_ELASTIC_NOTICE";
// The exit status of every rank that stopped at a commit because the hosts
// changed: sysexits' EX_TEMPFAIL ("try again"), which chorusrun --elastic
// reads as "restart me", not as a failure.
inline constexpr int kElasticRestartExitCode = 75;

// The name of the host a rank runs on, as chorusrun --elastic leaves failed
// hosts out and as each host's commit folder is named: the Slurm node name
// when slurmd started the process (SLURMD_NODENAME; srun --exclude takes
// node names, and several Slurm nodes may share one host name, as the
// suite's virtual nodes do), else the host name.
inline std::string elastic_host_name(const std::string& hostname, const char* slurm_node) {
  return slurm_node != nullptr && *slurm_node != '\0' ? std::string(slurm_node) : hostname;
}

}  // namespace chorus
