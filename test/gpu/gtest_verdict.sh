# Sourced by run_device_checks.sh (and by gtest_verdict_test.sh, which tests
# it on this machine with a CPU GoogleTest program).
#
# gtest_verdict STATUS OUTPUT: the verdict on one run of a GoogleTest program,
# perhaps several processes under mpirun, each printing its own summary.
# Prints "PASS <detail>" or "FAIL <detail>". Exit status 0 is not enough: a
# --gtest_filter that matches nothing, or a program that is not GoogleTest at
# all, exits 0 having tested nothing. So every process must have printed
# GoogleTest's summary ("[==========] N tests from M test suites ran") with
# N > 0, and none may have skipped a test (every check of the device run
# needs the GPU the machine has).
gtest_verdict() {
  local status=$1 output=$2
  local ran passed skipped processes empty
  output=$(sed 's/\x1b\[[0-9;]*m//g' <<<"$output")  # colour, if it was not turned off
  ran=$(grep -oE '\[==========\] [0-9]+ tests? from [0-9]+ test suites? ran' <<<"$output" | awk '{ print $2 }')
  processes=$(grep -c . <<<"$ran")
  [[ -z $ran ]] && processes=0
  empty=$(grep -cx 0 <<<"$ran")
  passed=$(grep -oE '\[  PASSED  \] [0-9]+ tests?\.' <<<"$output" | awk '{ n += $4 } END { print n + 0 }')
  skipped=$(grep -oE '\[  SKIPPED \] [0-9]+ tests?[,.]' <<<"$output" | awk '{ n += $4 } END { print n + 0 }')
  if ((status != 0)); then
    echo "FAIL exit $status; see the log ($(grep -m1 -E 'FAILED|error|timed out' <<<"$output"))"
  elif ((processes == 0)); then
    echo "FAIL no GoogleTest summary ('[==========] N tests from M test suites ran') in the output: it tested nothing"
  elif ((empty > 0)); then
    echo "FAIL $empty of $processes process(es) ran no test (a --gtest_filter that matches nothing?)"
  elif ((skipped > 0)); then
    echo "FAIL $skipped test(s) skipped on a machine with a GPU: $(grep -m1 -A1 ': Skipped$' <<<"$output" | tail -1)"
  else
    echo "PASS $passed tests passed$( ((processes > 1)) && echo " in $processes processes")"
  fi
}
