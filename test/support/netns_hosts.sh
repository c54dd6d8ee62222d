#!/usr/bin/env bash
# Two "hosts" on this machine for multi-host MPI tests: two network
# namespaces joined by a veth pair (10.200.0.1 and 10.200.0.2), each process
# tree started in one with its own host name (unshare -u), and an rsh agent
# through which mpirun starts its daemon on the second host (as it would use
# ssh). /dev/shm, /tmp and the pid namespace stay shared, as they are not
# between real hosts; Chorus and Open MPI tell the hosts apart by name.
#
# Source this file, then:
#   netns_hosts_up [3]             namespaces, link and agent; an EXIT trap tears
#                                  everything down (processes left in the
#                                  namespaces included), whatever happens.
#                                  With 3: a third host (10.200.0.3), the three
#                                  joined by a bridge in a fourth namespace (the
#                                  "switch"), so that any host can be killed or
#                                  cut off alone
#   netns_mpirun SLOTS [mpirun options] -- PROGRAM [ARGS]
#                                  mpirun from the first host with SLOTS slots
#                                  per host ("3,1": 3 on the first host, 1 on
#                                  the second; -np is their sum), under a
#                                  deadline of
#                                  NETNS_DEADLINE seconds (default 60);
#                                  returns mpirun's status (124/137: deadline)
#                                  NETNS_KEEPALIVE=0 leaves out Open MPI's TCP
#                                  keepalive (on by default: a cut link then
#                                  ends the job even without Chorus's heartbeat)
#   netns_chorusrun CHORUSRUN [chorusrun options] [--] PROGRAM [ARGS]
#                                  chorusrun from the first host, over the
#                                  hosts' network and through the agent (the
#                                  caller names the hosts: -H, --hostfile or a
#                                  discovery script), under the same deadline;
#                                  returns chorusrun's status (124/137:
#                                  deadline)
#   netns_pids                     the processes still in any namespace
#   netns_wait_empty               waits up to 5 s for the namespaces to have
#                                  no process left; returns 1 if some stay
#   netns_ps                       what netns_pids lists, a line "PID COMMAND"
#                                  each (for a failure's message)
#   netns_signal_host N SIGNAL     SIGNAL (KILL, STOP...) to every process of
#                                  host N, until a listing finds none left: a
#                                  process listed a moment ago may be gone and
#                                  one may be forked after the listing (a rank
#                                  wrapper once survived so); at most 40
#                                  rounds, 10 for STOP (a stopped process stays
#                                  listed)
# The hosts' names are netns_name1, netns_name2 and netns_name3
# (hier<pid>-h1...); a test may set others before netns_hosts_up.
# Names carry this shell's pid, so concurrent test runs never collide. The
# suite's rule (test/support/prerequisites.sh): without root the test skips
# (exit 77) saying so; as root, namespaces that cannot be made (no iproute2,
# no permission) FAIL the test with the reason.
set -uo pipefail
# shellcheck source=prerequisites.sh
source "$(dirname "${BASH_SOURCE[0]}")/prerequisites.sh"

netns_id=$$
netns_h1=chorus-hier-$netns_id-h1
netns_h2=chorus-hier-$netns_id-h2
netns_h3=chorus-hier-$netns_id-h3
netns_switch=chorus-hier-$netns_id-sw
netns_name1=hier$netns_id-h1
netns_name2=hier$netns_id-h2
netns_name3=hier$netns_id-h3
netns_count=2
netns_veth1=chh${netns_id}a
netns_veth2=chh${netns_id}b
netns_work=
NETNS_DEADLINE=${NETNS_DEADLINE:-60}

netns_fail_setup() {
  echo "FAIL: two network-namespace hosts are needed for this test and could not be set up: $*" >&2
  exit 1
}

netns_pids() {
  local ns
  for ns in "$netns_h1" "$netns_h2" "$netns_h3"; do ip netns pids "$ns" 2>/dev/null; done | tr '\n' ' '
}

netns_wait_empty() {
  local i
  for i in $(seq 50); do
    [[ -z $(netns_pids | tr -d ' ') ]] && return 0
    sleep 0.1
  done
  [[ -z $(netns_pids | tr -d ' ') ]]
}

netns_ps() {
  local pids
  pids=$(netns_pids)
  ps -o pid=,args= -p "${pids// /,}" 2>/dev/null
}

netns_signal_host() {
  local ns=chorus-hier-$netns_id-h$1 signal=$2 pids i
  for i in $(seq 40); do
    pids=$(ip netns pids "$ns")
    [[ -z $pids ]] && return 0
    kill "-$signal" $pids 2>/dev/null
    [[ $signal == STOP ]] && [[ $i -ge 10 ]] && return 0
    sleep 0.05
  done
}

netns_hosts_down() {
  local pids i
  for i in 1 2 3; do
    pids=$(netns_pids)
    [[ -z ${pids// /} ]] && break
    kill -9 $pids 2>/dev/null
    sleep 0.1
  done
  ip netns del "$netns_h1" 2>/dev/null
  ip netns del "$netns_h2" 2>/dev/null
  ip netns del "$netns_h3" 2>/dev/null
  ip netns del "$netns_switch" 2>/dev/null
  [[ -n $netns_work ]] && rm -rf "$netns_work"
  return 0
}

# Namespaces of earlier runs that were killed outright (SIGKILL skips the
# trap), recognised by the pid in their name.
netns_remove_stale() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | sed -n 's/^\(chorus-hier-[0-9]*-\(h[123]\|sw\)\).*/\1/p'); do
    pid=${ns#chorus-hier-}
    pid=${pid%-*}
    kill -0 "$pid" 2>/dev/null && continue
    local pids
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [[ -n $pids ]] && kill -9 $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  return 0
}

netns_hosts_up() {
  chorus_require_root "$(basename "$0")" "creating network namespaces"
  chorus_require_tool "$(basename "$0")" ip "iproute2: the namespaces and their links"
  chorus_require_tool "$(basename "$0")" unshare "util-linux: a host name per namespace"
  trap netns_hosts_down EXIT
  trap 'exit 1' INT TERM
  netns_remove_stale
  netns_work=$(mktemp -d /tmp/chorus-hier-netns-XXXXXX) || netns_fail_setup "mktemp failed"
  netns_count=${1:-2}
  if [[ $netns_count == 3 ]]; then
    netns_three_hosts_up
  else
    netns_two_hosts_up
  fi
  netns_write_agent
}

netns_three_hosts_up() {
  local i ns
  ip netns add "$netns_switch" || netns_fail_setup "'ip netns add $netns_switch' failed"
  ip -n "$netns_switch" link add br0 type bridge && ip -n "$netns_switch" link set br0 up ||
    netns_fail_setup "cannot create a bridge"
  for i in 1 2 3; do
    ns=chorus-hier-$netns_id-h$i
    ip netns add "$ns" || netns_fail_setup "'ip netns add $ns' failed"
    ip link add "chh${netns_id}h$i" type veth peer name "chh${netns_id}s$i" || netns_fail_setup "cannot create a veth pair"
    ip link set "chh${netns_id}h$i" netns "$ns" && ip link set "chh${netns_id}s$i" netns "$netns_switch" &&
      ip -n "$netns_switch" link set "chh${netns_id}s$i" master br0 &&
      ip -n "$netns_switch" link set "chh${netns_id}s$i" up &&
      ip -n "$ns" addr add "10.200.0.$i/24" dev "chh${netns_id}h$i" &&
      ip -n "$ns" link set lo up && ip -n "$ns" link set "chh${netns_id}h$i" up ||
      netns_fail_setup "cannot configure host $i's link"
  done
}

netns_two_hosts_up() {
  ip netns add "$netns_h1" || netns_fail_setup "'ip netns add $netns_h1' failed"
  ip netns add "$netns_h2" || netns_fail_setup "'ip netns add $netns_h2' failed"
  ip link add "$netns_veth1" type veth peer name "$netns_veth2" || netns_fail_setup "cannot create a veth pair"
  ip link set "$netns_veth1" netns "$netns_h1" && ip link set "$netns_veth2" netns "$netns_h2" &&
    ip -n "$netns_h1" addr add 10.200.0.1/24 dev "$netns_veth1" &&
    ip -n "$netns_h2" addr add 10.200.0.2/24 dev "$netns_veth2" &&
    ip -n "$netns_h1" link set lo up && ip -n "$netns_h2" link set lo up &&
    ip -n "$netns_h1" link set "$netns_veth1" up && ip -n "$netns_h2" link set "$netns_veth2" up ||
    netns_fail_setup "cannot configure the veth pair"
}

netns_write_agent() {
  # mpirun calls: AGENT [ssh options] HOST COMMAND...; the address picks the namespace.
  cat >"$netns_work/rsh" <<AGENT
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1; shift
case "\$host" in
  10.200.0.1) ns=$netns_h1; name=$netns_name1 ;;
  10.200.0.2) ns=$netns_h2; name=$netns_name2 ;;
  10.200.0.3) ns=$netns_h3; name=$netns_name3 ;;
  *) echo "rsh agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare -u sh -c "hostname \$name; \$*"
AGENT
  chmod +x "$netns_work/rsh"
}

netns_mpirun() {
  local slots1=${1%,*} slots2=${1#*,}
  shift
  printf '10.200.0.1 slots=%s\n10.200.0.2 slots=%s\n' "$slots1" "$slots2" >"$netns_work/hostfile"
  local options=()
  while [[ $# -gt 0 && $1 != -- ]]; do options+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  local keepalive=(--mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 2 --mca oob_tcp_keepalive_probes 2)
  [[ ${NETNS_KEEPALIVE:-1} == 0 ]] && keepalive=()
  netns_on_host1 mpirun -np $((slots1 + slots2)) --hostfile "$netns_work/hostfile" --oversubscribe \
    --mca plm_rsh_agent "$netns_work/rsh" --mca btl self,vader,tcp \
    --mca btl_tcp_if_include 10.200.0.0/24 --mca oob_tcp_if_include 10.200.0.0/24 \
    "${keepalive[@]}" "${options[@]}" "$@"
}

netns_chorusrun() {
  local chorusrun=$1
  shift
  netns_on_host1 "$chorusrun" --network-interface 10.200.0.0/24 --mpi-args "--mca plm_rsh_agent $netns_work/rsh" "$@"
}

# COMMAND... in the first host with its name, under the deadline: the
# launchers of netns_mpirun and netns_chorusrun.
netns_on_host1() {
  # The ctest environment pins Open MPI to loopback; these hosts talk over the veth.
  env -u OMPI_MCA_btl_tcp_if_include -u OMPI_MCA_oob_tcp_if_include \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout -k 5 "$NETNS_DEADLINE" ip netns exec "$netns_h1" unshare -u \
    sh -c 'hostname "$0"; exec "$@"' "$netns_name1" "$@"
}
