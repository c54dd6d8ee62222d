#!/usr/bin/env bash
# Runs the whole test suite: installs what is missing, builds what is stale,
# then ctest of the sanitizer build (build-sanitize/) and ctest of the normal
# build (build/), both with --output-on-failure and in parallel (parallel
# tests declare PROCESSORS 2, so ctest never oversubscribes the cores).
# The normal build runs from the start beside the sanitizer's build and tests,
# at the lowest CPU priority (SCHED_IDLE): it takes only the time the cores
# would otherwise idle (the tests leave about half of it, waiting on peers,
# timeouts and launchers), so nothing of the sanitizer's run waits for it,
# and its output is shown once the sanitizer's tests are done.
# The last line is "N passed, M failed, K skipped" over both runs (a test that
# skipped, e.g. one needing a GPU on a machine without one, is not a pass); the exit status is
# non-zero if anything failed in either. A build that fails counts as one
# failure (its tests cannot run).
#   scripts/run_tests.sh [ctest options...]   e.g. -L unit, -R fusion
#   CHORUS_TEST_JOBS=N overrides ctest's parallelism (default: nproc).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install_deps.sh"
command -v ctest >/dev/null 2>&1 || { echo "run_tests: error: ctest not found" >&2; exit 1; }

if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
jobs="${CHORUS_TEST_JOBS:-$(nproc)}"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "run_tests: CHORUS_TEST_JOBS='$jobs' is not a positive integer" >&2; exit 2; }

log=$(mktemp)
normal_build_log=$(mktemp)
normal_build_pid=""
# kill_tree <pid>: the process and all its descendants (Ninja's jobs run in
# process groups of their own, so one group kill would miss them).
kill_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
cleanup() {
  [[ -n "$normal_build_pid" ]] && kill_tree "$normal_build_pid"
  rm -f "$log" "$normal_build_log"
}
trap cleanup EXIT
total_passed=0
total_failed=0
total_skipped=0
summaries=()

# The normal build, started in the background at idle priority (nice 19
# where SCHED_IDLE is refused); finish_normal_build waits for it and shows
# its output. It stays in this session: with the kernel's autogroups on (as
# on this project's machines), a session of its own would get an equal share
# of the CPU beside the tests' session, whatever its threads' policy.
start_normal_build() {
  local idle=(chrt --idle 0)
  "${idle[@]}" true 2>/dev/null || idle=(nice -n 19)
  "${idle[@]}" "$root/scripts/build.sh" >"$normal_build_log" 2>&1 &
  normal_build_pid=$!
}
finish_normal_build() {
  local rc=0
  wait "$normal_build_pid" || rc=$?
  normal_build_pid=""
  cat "$normal_build_log" >&2
  return "$rc"
}

# run_suite <label> <build dir> <build command...>: builds, runs ctest, adds
# its counts to the totals.
run_suite() {
  local label="$1" dir="$2"
  shift 2
  local passed=0 failed=0 skipped=0 rc=0 summary
  echo "=== run_tests: $label build ($dir) ===" >&2
  if ! "$@"; then
    echo "run_tests: the $label build failed; its tests were not run (counted as 1 failure)" >&2
    failed=1
  else
    echo "=== run_tests: $label tests ===" >&2
    ctest --test-dir "$dir" --output-on-failure -j "$jobs" "${ctest_args[@]}" 2>&1 | tee "$log" ||
      rc=${PIPESTATUS[0]}
    summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
    if [[ -n "$summary" ]]; then
      local total
      failed=$(sed -E 's/^.* ([0-9]+) tests? failed out of.*$/\1/' <<<"$summary")
      total=$(sed -E 's/^.*failed out of ([0-9]+).*$/\1/' <<<"$summary")
      # ctest counts a skipped test (exit 77, GTEST_SKIP through
      # gpu_test_main) among the passed ones and lists it as "(Skipped)".
      skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$log" || true)
      passed=$((total - failed - skipped))
    fi
    if ((rc != 0 && failed == 0)); then
      echo "run_tests: ctest in $dir exited with status $rc (counted as 1 failure)" >&2
      failed=1
    fi
  fi
  summaries+=("$label: $passed passed, $failed failed, $skipped skipped")
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  total_skipped=$((total_skipped + skipped))
}

ctest_args=("$@")
start_normal_build
run_suite sanitizer "$root/build-sanitize" "$root/scripts/build.sh" --sanitize
run_suite normal "$root/build" finish_normal_build

(IFS=';'; echo "run_tests: ${summaries[*]}" | sed 's/;/; /g')
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
((total_failed == 0))
