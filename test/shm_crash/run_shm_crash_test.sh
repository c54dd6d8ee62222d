#!/usr/bin/env bash
# Runs a crash probe (shm_crash_probe, trigger_crash_probe) under mpirun, in
# which one rank is killed while the others wait for it, and checks that
# every survivor reported the dead rank (no hang: the whole job has a
# deadline), and that the job left no shared-memory segment behind.
# Usage: run_shm_crash_test.sh <mpirun> <np> <probe> [probe arguments...]
set -u
mpirun=$1 np=$2 probe=$3
shift 3
deadline=60
output=$(mktemp)
trap 'rm -f "$output"' EXIT
# orte_enable_recovery: Open MPI would otherwise kill the survivors as soon
# as the victim dies, before they can report what they saw.
timeout --kill-after=5 "$deadline" "$mpirun" -np "$np" --oversubscribe --mca orte_enable_recovery 1 \
  "$probe" "$@" >"$output" 2>&1
status=$?
cat "$output"
fail() { echo "shm crash test FAILED: $*"; exit 1; }
[[ $status -eq 124 || $status -eq 137 ]] && fail "the job did not end within $deadline s (survivors hung)"
ok=$(grep -c "^SHM_CRASH_SURVIVOR rank=[0-9]* ok$" "$output")
[[ $ok -eq $((np - 1)) ]] || fail "expected $((np - 1)) surviving ranks to report the dead rank, $ok did"
creator=$(sed -n 's/^SHM_CRASH_CREATOR pid=\([0-9]*\)$/\1/p' "$output")
[[ -n $creator ]] || fail "rank 0 did not print its pid"
left=$(ls /dev/shm | grep "^chorus-shm\.$creator\." || true)
[[ -z $left ]] || fail "segments left in /dev/shm: $left"
echo "shm crash test passed: $ok survivors reported the killed rank; nothing left in /dev/shm"
