#!/usr/bin/env bash
# chorusrun across two "hosts": two network namespaces joined by a veth pair,
# each with its own host name (unshare -u), from test/support/netns_hosts.sh.
# chorusrun runs in the first and reaches the second through an rsh agent
# script (as mpirun would use ssh).
# Checks, with 2 ranks per host:
#   1. a run whose ranks allreduce; every rank's tagged line names its host;
#      the same from a --hostfile of 1 and 3 slots: each rank on the host
#      the hostfile gives it;
#   2. a rank on the remote host exiting 3: chorusrun names it and exits 3;
#   3. the link cut while ranks wait: the job ends (Open MPI's TCP keepalive,
#      set by chorusrun) instead of hanging.
# After each: no process left in either namespace.
# Exit 77 (CTest SKIP_RETURN_CODE) without root; as root, namespaces that
# cannot be created fail the test (test/support/prerequisites.sh).
#   multihost_netns_test.sh CHORUSRUN LAUNCHER_TEST_PROGRAM
set -uo pipefail

chorusrun=$1
program=$2
# shellcheck source=../support/netns_hosts.sh
source "$(dirname "$0")/../support/netns_hosts.sh"
fail() { echo "FAIL: $*"; failed=1; }
failed=0

# The host names the checks below expect.
netns_name1=chorus-h1
netns_name2=chorus-h2
netns_hosts_up
work=$netns_work
NETNS_DEADLINE=90

# on_host1 ARGS...: chorusrun in the first host, given the hosts with -H, 2
# ranks each.
on_host1() { netns_chorusrun "$chorusrun" -H 10.200.0.1:2,10.200.0.2:2 "$@"; }

no_leftovers() { netns_wait_empty || fail "$1: processes left behind: $(netns_ps)"; }

# 1. Success: every rank on its host, sums right.
out=$(on_host1 "$program" allreduce 2>&1); rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "allreduce run exited $rc"
for rank in 0 1 2 3; do
  host=chorus-h$((rank / 2 + 1))
  grep -qx "\[$rank\] rank $rank of 4 on $host: allreduce sum 10" <<<"$out" ||
    fail "no line '[$rank] rank $rank of 4 on $host: allreduce sum 10'"
done
no_leftovers "allreduce run"

# 1b. The hosts from a hostfile, as a user writes one (comments, uneven
# slots, no -np): 4 ranks, the first host's one slot takes rank 0 and the
# second host's three slots ranks 1-3.
cat >"$work/hostfile" <<'HOSTS'
# the job's hosts
10.200.0.1 slots=1   # where chorusrun runs

10.200.0.2 slots=3
HOSTS
out=$(netns_chorusrun "$chorusrun" --hostfile "$work/hostfile" "$program" allreduce 2>&1); rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "hostfile run exited $rc"
for rank in 0 1 2 3; do
  host=chorus-h2
  ((rank == 0)) && host=chorus-h1
  grep -qx "\[$rank\] rank $rank of 4 on $host: allreduce sum 10" <<<"$out" ||
    fail "hostfile run: no line '[$rank] rank $rank of 4 on $host: allreduce sum 10'"
done
no_leftovers "hostfile run"

# 2. A remote rank exits 3.
out=$(on_host1 "$program" exit 3 3 2>&1); rc=$?
echo "$out"
[[ $rc -eq 3 ]] || fail "exit run: chorusrun exited $rc, expected 3"
last=$(tail -n 1 <<<"$out")
[[ "$last" == "chorusrun: rank 3 (on chorus-h2) exited with code 3" ]] || fail "exit run: last line '$last'"
no_leftovers "exit run"

# 3. The link is cut while every rank waits: the job must end by itself.
ready=$work/ready
mkdir -p "$ready"
on_host1 "$program" wait "$ready" >"$work/cut.out" 2>&1 &
job=$!
for i in $(seq 600); do
  [[ $(ls "$ready" | wc -l) -eq 4 ]] && break
  sleep 0.1
done
[[ $(ls "$ready" | wc -l) -eq 4 ]] || fail "cut run: ranks never got ready"
ip -n "$netns_h2" link set "$netns_veth2" down
wait $job; rc=$?
cat "$work/cut.out"
[[ $rc -ne 0 && $rc -ne 124 && $rc -ne 137 ]] || fail "cut run: chorusrun exited $rc (124/137: it hung until the deadline)"
last=$(tail -n 1 "$work/cut.out")
# Ranks 2 and 3 cannot report across the cut link; a local rank whose wrapper
# mpirun killed outright may be named too.
[[ "$last" =~ ^chorusrun:\ rank\(s\)\ \[([01],\ )*2,\ 3\]\ ended\ without\ reporting\ how ]] ||
  fail "cut run: last line '$last'"
# The far side cannot be reached any more: what matters there is that its
# processes end by themselves (orted loses mpirun; the wrappers' parent dies).
no_leftovers "cut run"

if [[ $failed -ne 0 ]]; then echo "multihost_netns_test: FAILED"; exit 1; fi
echo "multihost_netns_test: passed"
