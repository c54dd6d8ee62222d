# Sourced by the Slurm integration tests (test/slurm/*_test.sh). The cluster
# is started by the slurm_cluster_start fixture (scripts/slurm_cluster.sh)
# and found through SLURM_CONF, which CTest sets for every Slurm test.

# shellcheck source=prerequisites.sh
source "$(dirname "${BASH_SOURCE[0]}")/prerequisites.sh"

# slurm_test_begin NAME: checks that the cluster can be used, or explains why
# not: a skip without root, a failure otherwise (test/support/prerequisites.sh).
slurm_test_begin() {
  test_name=$1
  chorus_require_root "$test_name" "the local Slurm cluster (slurmd)"
  [[ -n ${SLURM_CONF:-} ]] || fail "SLURM_CONF is not set: run this test through ctest (the slurm_cluster fixture sets it)"
  [[ -r $SLURM_CONF ]] ||
    fail "SLURM_CONF=$SLURM_CONF does not exist: the slurm_cluster_start fixture did not start the cluster (see its output)"
  local tool
  for tool in srun sbatch squeue scontrol; do
    command -v "$tool" >/dev/null || fail "'$tool' is not installed: run scripts/install_deps.sh"
  done
  local states
  states=$(timeout 10 sinfo -h -N -o '%N %t' 2>&1) || fail "sinfo cannot reach the cluster: $states"
  echo "$test_name: nodes: $(echo $states)"
  work_dir=$(mktemp -d "${TMPDIR:-/tmp}/$test_name.XXXXXX")
}

fail() {
  echo "${test_name:-slurm test}: FAIL: $*" >&2
  exit 1
}

# submit_job JOB_NAME OUTPUT_FILE [sbatch options] SCRIPT [ARGS]: submits
# the job with sbatch (which passes this environment on to it; variables set
# on the call's line included) and sets `job_id`; fails unless sbatch accepts
# it within 30 s.
submit_job() {
  local name=$1 output=$2
  shift 2
  job_id=$(timeout 30 sbatch --parsable --job-name="$name" --output="$output" "$@") ||
    fail "sbatch did not accept the job"
  job_id=${job_id%%;*}
  echo "job $job_id submitted"
}

# expect_job_completed JOB_ID SECONDS OUTPUT_FILE: waits for the sbatch job to
# leave the queue (cancelling it, with its output shown, after SECONDS), shows
# its output, and fails unless Slurm says it COMPLETED with exit code 0:0
# (expect_job_state_completed).
expect_job_completed() {
  local job_id=$1 seconds=$2 output=$3
  local deadline=$((SECONDS + seconds))
  while [[ -n $(squeue -h -j "$job_id" -t pending,running,completing -o %t 2>/dev/null) ]]; do
    if ((SECONDS >= deadline)); then
      scancel "$job_id" || true
      [[ -r $output ]] && sed 's/^/  | /' "$output"
      fail "job $job_id did not end within $seconds s (cancelled)"
    fi
    sleep 0.5
  done
  [[ -r $output ]] || fail "the job wrote no output file $output"
  sed 's/^/  | /' "$output"
  expect_job_state_completed "$job_id"
}

# expect_job_state_completed JOB_ID: the job, out of the queue, must have
# COMPLETED with exit code 0:0 by Slurm's account.
expect_job_state_completed() {
  local job_id=$1 info state exit_code
  info=$(scontrol show job "$job_id" 2>&1) || fail "scontrol does not know job $job_id: $info"
  state=$(grep -o 'JobState=[A-Z_]*' <<<"$info")
  exit_code=$(grep -o ' ExitCode=[0-9:]*' <<<"$info")
  echo "job $job_id: $state$exit_code"
  [[ $state == JobState=COMPLETED && $exit_code == ' ExitCode=0:0' ]] ||
    fail "job $job_id ended with $state$exit_code"
}

# run_bounded SECONDS OUTPUT_FILE COMMAND...: runs COMMAND with a deadline,
# output to the file and to this test's log; sets `rc`, `elapsed` and
# `timed_out` (1 when the deadline ended it: timeout's 124, or 137 from its
# SIGKILL, which srun also returns when a task was killed).
run_bounded() {
  local limit=$1 output=$2
  shift 2
  echo "+ $*"
  local start=$SECONDS
  set +e
  timeout --kill-after=5 "$limit" "$@" >"$output" 2>&1
  rc=$?
  set -e
  elapsed=$((SECONDS - start))
  timed_out=0
  if ((rc == 124 || (rc == 137 && elapsed >= limit))); then timed_out=1; fi
  sed 's/^/  | /' "$output"
  echo "exit status $rc after ${elapsed} s"
}

# expect_line FILE REGEX WHAT: FILE must contain a line matching REGEX.
expect_line() {
  grep -Eq -- "$2" "$1" || fail "$3 (no line matches '$2')"
}

# wait_until_gone SECONDS JOB_NAME: the cluster must have no running job or
# step named JOB_NAME within SECONDS.
wait_until_gone() {
  local deadline=$((SECONDS + $1)) left
  while :; do
    left=$(squeue -h -n "$2" -t running,pending,completing -o '%i %t' 2>/dev/null || true)
    [[ -z $left ]] && return 0
    ((SECONDS < deadline)) || fail "job '$2' still listed after $1 s: $left"
    sleep 0.2
  done
}

# Pids of the processes running the executable $1 (matched by /proc/PID/exe,
# so scripts that merely name it on their command line do not count).
pids_running() {
  local exe
  exe=$(readlink -f "$1")
  find /proc/[0-9]*/exe -maxdepth 0 -lname "$exe" 2>/dev/null | cut -d/ -f3
  return 0
}
