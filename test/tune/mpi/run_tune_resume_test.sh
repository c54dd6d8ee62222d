#!/usr/bin/env bash
# Kill-and-resume of the search over process sets (issue 28): the first run
# of tune_resume_probe dies (the last rank of the group that begins trial 4
# raises SIGKILL; mpirun ends the job), the second resumes from the state file,
# and the probe's check compares the two state files and the journals of
# the jobs each run trained. The job must end (a deadline) and leave
# nothing behind.
# Usage: run_tune_resume_test.sh <np> <mpirun> <tune_resume_probe>
set -u
np=$1 mpirun=$2 probe=$3
dir=$(mktemp -d /tmp/chorus-tune-resume-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "tune resume test FAILED: $*"; exit 1; }
deadline=90

timeout --kill-after=5 $deadline "$mpirun" -np "$np" --oversubscribe "$probe" run "$dir/state.json" "$dir/journal-1" 4
status=$?
echo "--- the first run ended with status $status"
[[ $status -ne 0 ]] || fail "the first run was to be killed but ended with status 0"
[[ $status -ne 124 ]] || fail "the first run did not end within $deadline s after its rank was killed"
[[ -f $dir/state.json ]] || fail "the killed run left no state file"
cp "$dir/state.json" "$dir/killed.json"

timeout --kill-after=5 $deadline "$mpirun" -np "$np" --oversubscribe "$probe" run "$dir/state.json" "$dir/journal-2" 4 resume ||
  fail "the resumed run failed (status $?)"
touch "$dir/journal-1" "$dir/journal-2"
"$probe" check "$dir/killed.json" "$dir/state.json" "$dir/journal-1" "$dir/journal-2" || fail "the logs are not consistent"
echo "tune resume test passed"
