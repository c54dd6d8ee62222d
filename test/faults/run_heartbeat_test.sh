#!/usr/bin/env bash
# The heartbeat (ops/heartbeat/heartbeat.h) seen from outside: a rank is
# frozen (SIGSTOP), killed (SIGKILL) or its host's link is cut while every
# rank waits for a collective; every rank still answering must report the
# lost rank and its host within the timeout plus a small margin, the job must
# end by itself (non-zero status) and no process of it may be left.
# Usage: run_heartbeat_test.sh <launcher> <fault> <np> <mpirun> <chorusrun> <fault_probe>
#   fault_probe  the probe program, or a command (words split at spaces:
#                "python3 heartbeat_probe.py", test/python/chorusrun/), which
#                takes the same arguments and prints the same lines
#   launcher  mpirun | chorusrun        this machine
#             srun                      the suite's Slurm cluster (SLURM_CONF set; 2 nodes x 2 tasks)
#             netns-mpirun | netns-chorusrun
#                                       two network-namespace hosts, 2 ranks each
#                                       (test/support/netns_hosts.sh); plain
#                                       mpirun runs without Open MPI's TCP keepalive
#   fault     stop                      the last rank is frozen
#             kill                      the last rank is killed: its process is gone,
#                                       which two things see at once, and both must
#                                       name it: the local peer watch of every rank
#                                       on its node ("rank V (pid P) exited while
#                                       rank R was waiting ...", within 0.1 s), and
#                                       the launcher in its own words (mpirun:
#                                       "process rank V ... on node H exited on
#                                       signal 9", chorusrun: "rank V (on H) was
#                                       killed by signal 9", srun: "NODE: task V:
#                                       Killed"). The job then ends before the
#                                       heartbeat's timeout, so ranks on another
#                                       node (srun's first) need not report; any
#                                       that does must name the victim
#             kill-tolerant             netns-mpirun only: ranks 0-2 on the first host,
#                                       rank 3 alone on the second is killed, and Open MPI
#                                       is told not to end the job on a dead rank
#                                       (orte_abort_on_non_zero_status 0): the
#                                       heartbeat must (no local peer can see it die)
#             cut                       netns only: the second host's link goes down
#             slow                      the last rank sleeps in its own code for
#                                       twice the timeout: nobody may declare it lost
set -u
launcher=$1 fault=$2 np=$3 mpirun=$4 chorusrun=$5
read -r -a probe <<<"$6"
timeout_s=3        # CHORUS_HEARTBEAT_TIMEOUT_SECONDS
margin_s=2         # detection allowed up to timeout + margin after the fault
deadline=90
token="hbtest-$launcher-$fault-$$-$RANDOM"
output=$(mktemp)
report_dir=$(mktemp -d)
export FAULT_REPORT_DIR=$report_dir
victim=$((np - 1))
fail() {
  echo "heartbeat test $launcher/$fault FAILED: $*"
  pkill -9 -f "$token" 2>/dev/null
  exit 1
}
# Without root the netns and srun cases skip (test/support/prerequisites.sh).
source "$(dirname "$0")/../support/prerequisites.sh"
cleanup_output() { rm -rf "$output" "$report_dir"; }
trap cleanup_output EXIT

export CHORUS_HEARTBEAT_TIMEOUT_SECONDS=$timeout_s CHORUS_STALL_CHECK_SECONDS=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
victims=$victim
[[ $fault == cut ]] && victims=2,3
slots=2,2
[[ $fault == kill-tolerant ]] && slots=3,1
[[ $fault != kill-tolerant || $launcher == netns-mpirun ]] || fail "kill-tolerant runs under netns-mpirun only"
if [[ $fault == slow ]]; then probe_args=(slow "$token" $((2 * timeout_s)))
else probe_args=(heartbeat "$token" "$victims"); fi
env_flags=(-x CHORUS_HEARTBEAT_TIMEOUT_SECONDS -x CHORUS_STALL_CHECK_SECONDS -x FAULT_REPORT_DIR)

case "$launcher" in
  netns-*)
    [[ $np -eq 4 ]] || fail "netns runs take np 4 (2 ranks per host)"
    # shellcheck source=../support/netns_hosts.sh
    source "$(dirname "$0")/../support/netns_hosts.sh"
    NETNS_DEADLINE=$deadline
    netns_hosts_up
    trap 'netns_hosts_down; cleanup_output' EXIT
    ;;
  srun)
    chorus_require_root "heartbeat test $launcher/$fault" "the local Slurm cluster (slurmd)"
    chorus_require_tool "heartbeat test $launcher/$fault" srun "Slurm's client"
    [[ -n ${SLURM_CONF:-} ]] || fail "SLURM_CONF is not set: run this test through ctest (the slurm_cluster fixture sets it)"
    ;;
esac
[[ $fault != cut || $launcher == netns-* ]] ||
  fail "a cut link needs hosts with links of their own (netns-*); on $launcher every rank shares one loopback"

run_job() {
  case "$launcher" in
    mpirun) timeout -k 5 $deadline "$mpirun" -np "$np" --oversubscribe "${env_flags[@]}" "${probe[@]}" "${probe_args[@]}" ;;
    chorusrun) timeout -k 5 $deadline "$chorusrun" -np "$np" --no-tag-output -- "${probe[@]}" "${probe_args[@]}" ;;
    srun)
      timeout -k 5 $deadline srun --job-name="$token" -N2 -n"$np" --ntasks-per-node=$((np / 2)) --mpi=pmix \
        "${probe[@]}" "${probe_args[@]}" ;;
    netns-mpirun)
      # Plain mpirun, as a user types it: no keepalive (netns_hosts.sh adds it by default).
      local tolerant=()
      [[ $fault == kill-tolerant ]] && tolerant=(--mca orte_abort_on_non_zero_status 0)
      NETNS_KEEPALIVE=0 netns_mpirun $slots "${tolerant[@]}" "${env_flags[@]}" -- "${probe[@]}" "${probe_args[@]}" ;;
    netns-chorusrun)
      netns_chorusrun "$chorusrun" -H 10.200.0.1:2,10.200.0.2:2 --no-tag-output \
        -- "${probe[@]}" "${probe_args[@]}" ;;
    *) echo "run_heartbeat_test: unknown launcher '$launcher'" >&2; exit 2 ;;
  esac
}

now() { date +%s.%N; }
start=$(now)
run_job >"$output" 2>&1 &
job=$!

if [[ $fault != slow ]]; then
  for _ in $(seq 600); do
    [[ $(grep -c '^FAULT_READY ' "$output") -eq $np ]] && break
    kill -0 $job 2>/dev/null || break
    sleep 0.1
  done
  [[ $(grep -c '^FAULT_READY ' "$output") -eq $np ]] || { cat "$output"; fail "the ranks never got ready"; }
  # Beats flow for a while first: a loss right at start-up is not what this tests.
  sleep 1
  victim_pid=$(sed -n "s/^FAULT_READY rank=$victim pid=\([0-9]*\) .*/\1/p" "$output")
  victim_host=$(sed -n "s/^FAULT_READY rank=$victim pid=[0-9]* host=\(.*\)$/\1/p" "$output")
  host0=$(sed -n "s/^FAULT_READY rank=0 pid=[0-9]* host=\(.*\)$/\1/p" "$output")
  # Each rank's node: this host, or under srun its Slurm node (the virtual
  # nodes share one host name), read from the rank's environment while it runs.
  declare -A node_of
  for r in $(seq 0 $((np - 1))); do
    node_of[$r]=$(sed -n "s/^FAULT_READY rank=$r pid=[0-9]* host=\(.*\)$/\1/p" "$output")
    if [[ $launcher == srun ]]; then
      pid=$(sed -n "s/^FAULT_READY rank=$r pid=\([0-9]*\) .*/\1/p" "$output")
      node_of[$r]=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^SLURMD_NODENAME=//p')
      [[ -n ${node_of[$r]} ]] || fail "rank $r (pid $pid) has no SLURMD_NODENAME"
    fi
  done
  fault_at=$(now)
  case "$fault" in
    stop) kill -STOP "$victim_pid" ;;
    kill | kill-tolerant) kill -KILL "$victim_pid" ;;
    cut) ip -n "$netns_h2" link set "$netns_veth2" down ;;
  esac
  echo "--- $fault of rank $victim (pid $victim_pid on $victim_host) at $fault_at"
  if [[ $fault == cut ]]; then
    # Every rank, on both sides, must end by itself while the link is down.
    # Open MPI's own mpirun and the far host's orted cannot: each waits for
    # the other's acknowledgement (TCP retransmission, keepalive or not), so
    # the partition then heals and they must end too.
    ranks_gone_at=
    for _ in $(seq $(((timeout_s + 15) * 10))); do
      if [[ -z $(pgrep -f "$token" | xargs -r ps -o comm= -p | grep fault_probe) ]]; then ranks_gone_at=$(now); break; fi
      sleep 0.1
    done
    [[ -n $ranks_gone_at ]] || fail "ranks still running $((timeout_s + 15)) s after the link was cut"
    echo "--- every rank had ended $(awk -v a="$fault_at" -v b="$ranks_gone_at" 'BEGIN { printf "%.2f", b - a }') s after the cut; the link comes back"
    ip -n "$netns_h2" link set "$netns_veth2" up
  fi
fi
wait $job
status=$?
ended=$(now)
cat "$output"
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
echo "--- the job ended with status $status, $(elapsed "$start" "$ended") s after it started"
# 124/137 may be the job's own status too (a rank SIGKILLed): tell by the time.
awk -v s="$(elapsed "$start" "$ended")" -v d=$deadline 'BEGIN { exit !(s < d) }' || fail "the job did not end within $deadline s"

if [[ $fault == slow ]]; then
  [[ $status -eq 0 ]] || fail "the job failed although its last rank was only slow"
  [[ $(grep -c '^FAULT_SURVIVOR rank=[0-9]* ok ' "$output") -eq $np ]] || fail "not every rank's allreduce succeeded"
  ! grep -q 'stopped answering' "$output" || fail "a slow rank was declared lost"
else
  [[ $status -ne 0 ]] || fail "the job ended with status 0 after a rank was lost"
  # Who must report, and whom they must name.
  if [[ $fault == cut ]]; then
    near="0 1" far="2 3"
  else
    near=$(seq -s ' ' 0 $((np - 2))) far=""
  fi
  check_report() {  # rank, regex of the error
    local line at late
    line=$(cat "$output" "$report_dir"/* 2>/dev/null | grep "^FAULT_HEARTBEAT rank=$1 " | head -n 1)
    [[ -n $line ]] || fail "rank $1 reported nothing"
    [[ $line =~ $2 ]] || fail "rank $1's error does not match '$2': $line"
    # The heartbeat aborts the backends (a device collective would wait forever);
    # device=none: a probe without a device (the Python one).
    [[ $fault == kill || $line == *" device=aborted "* || $line == *" device=none "* ]] || fail "rank $1's device backend was not aborted: $line"
    at=$(sed -n 's/.* at=\([0-9.]*\) .*/\1/p' <<<"$line")
    late=$(awk -v a="$at" -v f="$fault_at" -v l=$((timeout_s + margin_s)) 'BEGIN { print (a - f > l) ? 1 : 0 }')
    [[ $late -eq 0 ]] || fail "rank $1 reported $(elapsed "$fault_at" "$at") s after the $fault (limit $((timeout_s + margin_s)) s)"
    echo "rank $1 reported after $(elapsed "$fault_at" "$at") s"
  }
  if [[ $fault == kill ]]; then
    # The launcher names the killed rank (and where it ran) in its own words.
    case "$launcher" in
      # Open MPI 4.1 prints "PID 0" here, whatever the pid was.
      mpirun) by_launcher="process rank $victim with PID [0-9]+ on node $victim_host exited on signal 9 \(Killed\)" ;;
      chorusrun) by_launcher="^chorusrun: rank $victim \(on $victim_host\) was killed by signal 9 \(SIGKILL\)$" ;;
      srun) by_launcher="^srun: error: ${node_of[$victim]}: task $victim: Killed$" ;;
    esac
    grep -qE "$by_launcher" "$output" || fail "$launcher did not name the killed rank: no line matches '$by_launcher'"
    echo "$launcher named rank $victim: $(grep -m1 -E "$by_launcher" "$output")"
    # The local peer watch of every rank on the victim's node names it.
    others=""
    for r in $near; do
      if [[ ${node_of[$r]} == "${node_of[$victim]}" ]]; then
        check_report $r "rank $victim \(pid $victim_pid\) exited while rank $r was waiting "
      else
        others="$others $r"
      fi
    done
    # Ranks on another node hear of it from their heartbeat only after its
    # timeout, and the launcher has ended the job by then: a report is not
    # required of them, but one that came must name the victim.
    for r in $others; do
      if cat "$output" "$report_dir"/* 2>/dev/null | grep -q "^FAULT_HEARTBEAT rank=$r "; then
        check_report $r "rank $victim \(.*pid $victim_pid\)"
      else
        echo "rank $r (on ${node_of[$r]}, not the victim's node ${node_of[$victim]}) was ended before it reported"
      fi
    done
  else
    for r in $near; do
      if [[ $fault == cut ]]; then
        check_report $r "rank [23] \(host $victim_host, pid [0-9]+\) stopped answering"
      else
        check_report $r "rank $victim \(host $victim_host[^,]*, pid $victim_pid\) stopped answering"
      fi
    done
  fi
  # The far side of a cut link cannot reach anyone who could kill it: it
  # must see the loss too and end itself.
  for r in $far; do check_report $r "rank [01] \(host $host0, pid [0-9]+\)"; done
  took=$(elapsed "$fault_at" "$ended")
  awk -v t="$took" -v l=$((timeout_s + 15)) 'BEGIN { exit !(t <= l) }' || fail "the job ended only $took s after the $fault"
  echo "the job ended $took s after the $fault"
fi

# Nothing of the job may be left: ranks (a frozen one included), daemons.
for _ in $(seq 100); do
  left=$(pgrep -af "$token" | grep -v -e run_heartbeat_test -e "^$$ " || true)
  [[ $launcher == netns-* ]] && left="$left$(netns_pids | tr -d ' ')"
  [[ -z $left ]] && break
  sleep 0.1
done
[[ -z $left ]] || fail "processes left behind 10 s after the job ended: $left"
if [[ $launcher == srun ]]; then
  for _ in $(seq 50); do
    [[ -z $(squeue -h -n "$token" 2>/dev/null) ]] && break
    sleep 0.2
  done
  [[ -z $(squeue -h -n "$token" 2>/dev/null) ]] || fail "the Slurm step is still listed: $(squeue -h -n "$token")"
fi
echo "heartbeat test $launcher/$fault passed"
