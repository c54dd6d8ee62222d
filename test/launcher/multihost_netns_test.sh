#!/usr/bin/env bash
# chorusrun across two "hosts": two network namespaces joined by a veth pair,
# each with its own host name (unshare -u). chorusrun runs in the first and
# reaches the second through an rsh agent script (as mpirun would use ssh).
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
source "$(dirname "$0")/../support/prerequisites.sh"
setup_failed() { echo "FAIL: network-namespace hosts cannot be set up here: $*"; exit 1; }
fail() { echo "FAIL: $*"; failed=1; }

chorus_require_root multihost_netns_test "creating network namespaces"
chorus_require_tool multihost_netns_test ip "iproute2: the namespaces and their link"
chorus_require_tool multihost_netns_test unshare "util-linux: a host name per namespace"

id=$$
ns1=chorus-h1-$id
ns2=chorus-h2-$id
veth1=chv${id}a
veth2=chv${id}b
work=$(mktemp -d /tmp/chorusrun-netns-XXXXXX)
failed=0

kill_namespace() {
  local pids
  pids=$(ip netns pids "$1" 2>/dev/null || true)
  [[ -n "$pids" ]] && kill -9 $pids 2>/dev/null
  return 0
}
cleanup() {
  kill_namespace "$ns1"
  kill_namespace "$ns2"
  ip netns del "$ns1" 2>/dev/null
  ip netns del "$ns2" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$ns1" || setup_failed "'ip netns add' failed"
ip netns add "$ns2" || setup_failed "'ip netns add' failed for a second namespace"
ip link add "$veth1" type veth peer name "$veth2" || setup_failed "cannot create a veth pair"
ip link set "$veth1" netns "$ns1"
ip link set "$veth2" netns "$ns2"
ip -n "$ns1" addr add 10.200.0.1/24 dev "$veth1"
ip -n "$ns2" addr add 10.200.0.2/24 dev "$veth2"
for ns in "$ns1" "$ns2"; do ip -n "$ns" link set lo up; done
ip -n "$ns1" link set "$veth1" up
ip -n "$ns2" link set "$veth2" up

# mpirun calls: AGENT [ssh-like options] HOST COMMAND...; the host's address
# picks its namespace.
cat >"$work/rsh" <<AGENT
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1; shift
case "\$host" in
  10.200.0.1) ns=$ns1; name=chorus-h1 ;;
  10.200.0.2) ns=$ns2; name=chorus-h2 ;;
  *) echo "rsh agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare -u sh -c "hostname \$name; \$*"
AGENT
chmod +x "$work/rsh"

# chorusrun ARGS... inside the first host, with a deadline; on_host1 gives
# it the hosts with -H, 2 ranks each.
chorusrun_on_host1() {
  timeout -k 5 90 ip netns exec "$ns1" unshare -u sh -c 'hostname chorus-h1; exec "$@"' sh \
    "$chorusrun" --network-interface 10.200.0.0/24 --mpi-args "--mca plm_rsh_agent $work/rsh" "$@"
}
on_host1() { chorusrun_on_host1 -H 10.200.0.1:2,10.200.0.2:2 "$@"; }

no_leftovers() {
  local i pids
  for i in $(seq 50); do
    pids="$(ip netns pids "$ns1") $(ip netns pids "$ns2")"
    [[ -z "${pids// /}" ]] && return 0
    sleep 0.1
  done
  fail "$1: processes left behind: $(ps -o pid=,args= -p ${pids// /,} 2>/dev/null)"
}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include

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
out=$(chorusrun_on_host1 --hostfile "$work/hostfile" "$program" allreduce 2>&1); rc=$?
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
ip -n "$ns2" link set "$veth2" down
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
