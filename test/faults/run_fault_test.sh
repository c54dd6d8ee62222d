#!/usr/bin/env bash
# Runs fault_probe in one scenario and checks, from outside, what the job did:
# every survivor's report, the job's end (no hang: it has a deadline; a
# non-zero status) and that no process of it is left behind.
# Usage: run_fault_test.sh <scenario> <np> <mpirun> <chorusrun> <fault_probe>
#   stall-mpirun       the stall inspector stops the job (rank 1 stuck in its
#                      own code); the survivors' shutdown() ends it
#   stall-keep-going   the same with Open MPI told not to end the job on a
#                      rank's non-zero exit
#   stall-chorusrun    the same under chorusrun
#   kill-reports       the last rank is killed between cycles; every survivor
#                      must name it within 2.5 s (Open MPI keeps the job
#                      alive, orte_enable_recovery, so that each can report)
#   p2p-kill-reports   the last rank is killed while the others wait for a
#                      point-to-point message from it; every survivor must
#                      name it within 2.5 s (recovery on, as kill-reports)
#   kill-job-ends      the same without the stall inspector and with Open MPI
#                      told not to end the job on a dead rank: the survivors
#                      must end it
set -u
scenario=$1 np=$2 mpirun=$3 chorusrun=$4 probe=$5
token="fault-$scenario-$$-$RANDOM"
deadline=60
output=$(mktemp)
trap 'rm -f "$output"' EXIT
fail() { echo "fault test $scenario FAILED: $*"; pkill -9 -f "$token" 2>/dev/null; exit 1; }

stall_env=(-x CHORUS_STALL_CHECK_SECONDS=1 -x CHORUS_STALL_SHUTDOWN_SECONDS=3)
case "$scenario" in
  stall-mpirun) command=("$mpirun" -np "$np" --oversubscribe "${stall_env[@]}" "$probe" stall "$token") ;;
  stall-keep-going)
    command=("$mpirun" -np "$np" --oversubscribe --mca orte_abort_on_non_zero_status 0 "${stall_env[@]}"
             "$probe" stall "$token") ;;
  stall-chorusrun)
    command=("$chorusrun" -np "$np" --no-tag-output --stall-check-seconds 1 --stall-shutdown-seconds 3
             -- "$probe" stall "$token") ;;
  kill-reports)
    command=("$mpirun" -np "$np" --oversubscribe --mca orte_enable_recovery 1 -x CHORUS_STALL_CHECK_SECONDS=0
             "$probe" kill "$token") ;;
  p2p-kill-reports)
    command=("$mpirun" -np "$np" --oversubscribe --mca orte_enable_recovery 1 -x CHORUS_STALL_CHECK_SECONDS=0
             "$probe" p2p-kill "$token") ;;
  kill-job-ends)
    command=("$mpirun" -np "$np" --oversubscribe --mca orte_abort_on_non_zero_status 0
             -x CHORUS_STALL_CHECK_SECONDS=0 "$probe" kill "$token") ;;
  *) echo "run_fault_test: unknown scenario '$scenario'" >&2; exit 2 ;;
esac

start=$(date +%s%N)
timeout --kill-after=5 "$deadline" "${command[@]}" >"$output" 2>&1
status=$?
seconds=$(awk -v ns=$(($(date +%s%N) - start)) 'BEGIN { printf "%.2f", ns / 1e9 }')
cat "$output"
echo "--- the job ended after $seconds s with status $status"
# mpirun's own status may be 137 too (a rank was SIGKILLed): tell by the time.
awk -v s="$seconds" -v d="$deadline" 'BEGIN { exit !(s < d) }' || fail "the job did not end within $deadline s"

survivors=$((np - 1))
ok=$(grep -c "^FAULT_SURVIVOR rank=[0-9]* ok after=" "$output")
case "$scenario" in
  stall-*)
    [[ $ok -eq $survivors ]] || fail "expected $survivors survivors to report the stall shutdown, $ok did"
    # CHORUS_STALL_SHUTDOWN_SECONDS is 3: not before, and not much later.
    early_or_late=$(awk '/^FAULT_SURVIVOR/ { split($NF, a, "="); if (a[2] < 2.5 || a[2] > 10) print }' "$output")
    [[ -z $early_or_late ]] || fail "a survivor was stopped outside 2.5-10 s: $early_or_late"
    grep -q "^FAULT_STALLED rank=1 ok$" "$output" || fail "rank 1's runtime was not stopped by the stall shutdown"
    ! grep -q "^FAULT_SHUTDOWN_RETURNED" "$output" || fail "shutdown() returned after the stall: the job could not end"
    grep -q "ending the job here, since finalizing MPI would wait for the ranks that stopped responding" "$output" ||
      fail "no rank said why it ended the job"
    [[ $status -ne 0 ]] || fail "the job ended with status 0 after a stall shutdown"
    ;;
  kill-reports | p2p-kill-reports)
    [[ $ok -eq $survivors ]] || fail "expected $survivors survivors to name the killed rank, $ok did"
    slow=$(awk '/^FAULT_SURVIVOR/ { split($NF, a, "="); if (a[2] > 2.5) print }' "$output")
    [[ -z $slow ]] || fail "a survivor named the killed rank only after 2.5 s: $slow"
    ;;
  kill-job-ends)
    grep -q "exited while rank [0-9]* was waiting for the next negotiation cycle" "$output" ||
      fail "no survivor named the killed rank"
    [[ $status -ne 0 ]] || fail "the job ended with status 0 after a rank was killed"
    awk -v s="$seconds" 'BEGIN { exit !(s < 20) }' || fail "the job took $seconds s to end"
    ;;
esac

# Open MPI kills the ranks as it ends the job; give the kernel a moment.
for _ in $(seq 50); do
  pgrep -f "$token" >/dev/null || break
  sleep 0.1
done
left=$(pgrep -af "$token" | grep -v -- "run_fault_test" || true)
[[ -z $left ]] || fail "processes left behind: $left"
echo "fault test $scenario passed"
