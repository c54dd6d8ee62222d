#!/usr/bin/env bash
# Runs a GoogleTest binary under mpirun across two network-namespace hosts
# (test/support/netns_hosts.sh) in one placement, and checks that every rank
# passed, that rank 0 logged the path Chorus chose for the placement, and
# that nothing was left running in the namespaces.
# Usage: run_netns_test.sh block|cyclic|uneven HOSTS LOCAL PROGRAM [TESTS [ARGS...]]
#   TESTS: a --gtest_filter pattern (default: every test for the layout)
#   block H L:  ranks 0..L-1 on the first host, L..2L-1 on the second
#   cyclic H L: rank r on host r % 2 (mpirun --map-by node)
#   uneven:     3 ranks on the first host, 1 on the second
# (H is 2: two namespaces.)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../support/netns_hosts.sh
source "$here/../support/netns_hosts.sh"

kind=$1 hosts=$2 local=$3 program=$4 tests=${5:-}
shift $(($# < 5 ? $# : 5))
fail() { echo "run_netns_test FAILED ($kind $hosts x $local): $*"; exit 1; }
[[ $hosts == 2 ]] || fail "only 2 hosts are supported, got $hosts"
case $kind in
  block) slots=$local,$local; mapping=(); filter='HierarchicalRuntime.*'
         expected="hierarchical allreduce over 2 hosts x $local ranks" ;;
  cyclic) slots=$local,$local; mapping=(--map-by node); filter='HierarchicalRuntime.*'
          expected="hierarchical allreduce over 2 hosts x $local ranks" ;;
  uneven) slots=3,1; mapping=(); filter='HierarchicalRuntimeUneven.*'
          expected="hierarchical allreduce off: hosts hold between 1 and 3 ranks; flat MPI" ;;
  *) fail "layout must be block, cyclic or uneven, got '$kind'" ;;
esac

[[ -n $tests ]] && filter=$tests
netns_hosts_up
output=$netns_work/output
NETNS_DEADLINE=${NETNS_DEADLINE:-100} netns_mpirun "$slots" "${mapping[@]}" \
  -x HIER_TEST_LAYOUT="$kind $hosts $local" -x CHORUS_LOG_LEVEL=debug \
  -- "$program" --gtest_brief=1 --gtest_filter="$filter" "$@" >"$output" 2>&1
status=$?
# The debug log is long; the tests' own output and rank 0's path lines matter.
grep -v "^\[chorus .*DEBUG\]" "$output"
grep "hierarchical allreduce\|shared-memory allreduce" "$output" | sort | uniq -c
[[ $status -eq 124 || $status -eq 137 ]] && fail "mpirun did not end within the deadline"
[[ $status -eq 0 ]] || fail "mpirun exited with status $status"
grep -q "$expected" "$output" || fail "rank 0 never logged '$expected'"
netns_wait_empty || fail "processes left in the namespaces: $(netns_pids)"
echo "run_netns_test passed ($kind $hosts x $local)"
