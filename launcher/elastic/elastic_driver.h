// chorusrun --elastic: runs the job in attempts. Each attempt starts the
// ranks on the hosts available then (discovery script, -H, hostfile or the
// Slurm allocation, less the hosts that failed) under mpirun or srun. When
// it ends because a rank or host was lost, the failed hosts are left out
// and the job is started again on the others, which resume from their last
// commit (chorus::torch::ElasticState), as long as at least --min-np ranks
// fit; when the discovery script lists hosts that would hold more ranks, the
// ranks are told, stop at their next commit (exit status 75) and the job is
// started again on the larger set. A program's own error is not restarted.
#pragma once

#include "options/launch_options.h"
#include "plan/job_plan.h"
#include "process/environment.h"
#include "running/job_attempt.h"

namespace chorus::launcher {

// Returns chorusrun's exit status; prints what it does on stderr.
int run_elastic(const LaunchOptions& options, const Environment& env, const SystemFacts& facts,
                const AttemptSettings& settings);

}  // namespace chorus::launcher
