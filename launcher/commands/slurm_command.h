// The srun command line: one job step with one task per rank, inside the
// current allocation (or a new one srun asks for). Kept apart from the rest
// so the Slurm integration tests can read exactly what runs.
#pragma once

#include "plan/job_plan.h"
#include "process/command.h"

namespace chorus::launcher {

Command build_srun_command(const JobPlan& plan, const WrapperInvocation& wrapper);

}  // namespace chorus::launcher
