#!/usr/bin/env bash
# gtest_verdict.sh, the verdict run_device_checks.sh gives a GoogleTest step,
# on this machine with a CPU GoogleTest program: alone and under mpirun -np 2,
# a run of its tests passes with as many tests as --gtest_list_tests names;
# a filter that matches nothing, a program that is not GoogleTest and a
# non-zero exit fail.
#   gtest_verdict_test.sh GTEST_PROGRAM MPIEXEC
set -uo pipefail
program=$1 mpiexec=$2
source "$(dirname "$0")/gtest_verdict.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failed=0

# expect WHAT VERDICT_REGEX COMMAND...: runs COMMAND as run_device_checks.sh
# runs a step, and checks the verdict.
expect() {
  local what=$1 wanted=$2 output status verdict
  shift 2
  output=$(timeout -k 5 60 "$@" 2>&1)
  status=$?
  verdict=$(gtest_verdict "$status" "$output")
  if [[ $verdict =~ $wanted ]]; then
    echo "ok: $what: $verdict"
  else
    echo "FAIL: $what: verdict '$verdict', expected /$wanted/; the output was:"
    echo "$output" | sed 's/^/    /'
    failed=1
  fi
}

# The number of tests the program has, from GoogleTest's own listing (test
# names are the indented lines).
tests=$("$program" --gtest_list_tests | grep -c '^  ')
((tests > 0)) || { echo "FAIL: $program lists no test"; exit 1; }
flags=(--gtest_brief=1 --gtest_color=no)
expect "every test" "^PASS $tests tests passed\$" "$program" "${flags[@]}"
expect "every test, np 2" "^PASS $((2 * tests)) tests passed in 2 processes\$" \
  "$mpiexec" -np 2 --oversubscribe "$program" "${flags[@]}"
expect "a filter that matches nothing" "^FAIL 1 of 1 process\(es\) ran no test" \
  "$program" "${flags[@]}" --gtest_filter=NoSuchSuite.NoSuchTest
expect "a filter that matches nothing, np 2" "^FAIL 2 of 2 process\(es\) ran no test" \
  "$mpiexec" -np 2 --oversubscribe "$program" "${flags[@]}" --gtest_filter=NoSuchSuite.NoSuchTest
expect "not a GoogleTest program" "^FAIL no GoogleTest summary" true
expect "a non-zero exit" "^FAIL exit 3" sh -c 'exit 3'

if ((failed)); then echo "gtest_verdict_test: FAILED"; exit 1; fi
echo "gtest_verdict_test: passed"
