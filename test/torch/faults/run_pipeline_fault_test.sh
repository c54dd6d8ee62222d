#!/usr/bin/env bash
# A pipeline stage killed mid-step ends the job with an error naming it:
# pipeline_fault_probe at np 3 (3 stages); rank 1, the middle stage, is
# SIGKILLed during step 2. Checks from outside that both survivors failed
# with an error naming "stage 1 (rank 1)", that the job ended (deadline)
# with a non-zero status and that none of its processes is left.
#   run_pipeline_fault_test.sh <mpirun> <pipeline_fault_probe>
set -u
mpirun=$1 probe=$2
token="pipeline-fault-$$-$RANDOM"
deadline=90
output=$(mktemp)
trap 'rm -f "$output"' EXIT
fail() { echo "pipeline fault test FAILED: $*"; pkill -9 -f "$token" 2>/dev/null; exit 1; }

# Open MPI is told not to end the job at the first dead rank, so that each
# survivor can report what it saw; the job then ends when they leave, with
# a non-zero status.
start=$(date +%s%N)
timeout --kill-after=5 "$deadline" "$mpirun" -np 3 --oversubscribe --mca orte_abort_on_non_zero_status 0 \
  -x CHORUS_STALL_CHECK_SECONDS=0 "$probe" "$token" >"$output" 2>&1
status=$?
seconds=$(awk -v ns=$(($(date +%s%N) - start)) 'BEGIN { printf "%.2f", ns / 1e9 }')
cat "$output"
echo "--- the job ended after $seconds s with status $status"
awk -v s="$seconds" -v d="$deadline" 'BEGIN { exit !(s < d) }' || fail "the job did not end within $deadline s"
[[ $status -ne 0 ]] || fail "the job ended with status 0 after a stage was killed"
! grep -q "^PIPELINE_FAULT_NO_ERROR" "$output" || fail "a survivor finished its steps without an error"
for survivor in 0 2; do
  line=$(grep "^PIPELINE_FAULT_SURVIVOR rank=$survivor " "$output") || fail "rank $survivor reported no error"
  [[ "$line" == *"stage 1 (rank 1)"* ]] || fail "rank $survivor's error does not name stage 1 (rank 1): $line"
done
for _ in $(seq 50); do
  pgrep -f "$token" >/dev/null || break
  sleep 0.1
done
left=$(pgrep -af "$token" | grep -v -- "run_pipeline_fault_test" || true)
[[ -z $left ]] || fail "processes left behind: $left"
echo "pipeline fault test passed"
