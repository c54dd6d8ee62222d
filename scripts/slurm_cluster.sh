#!/usr/bin/env bash
# A real Slurm cluster on this one machine, for tests and for trying the
# Slurm examples: its own munged, one slurmctld and one slurmd per virtual
# node, all started by hand (no systemd needed) with every file under one
# state folder. Root is required (slurmd starts jobs as their users).
#
#   scripts/slurm_cluster.sh start  [--state-dir DIR] [--nodes N] [--cpus-per-node C] [--timeout S]
#   scripts/slurm_cluster.sh stop   [--state-dir DIR]
#   scripts/slurm_cluster.sh status [--state-dir DIR]
#   scripts/slurm_cluster.sh env    [--state-dir DIR]   # prints export SLURM_CONF=...
#
# start first stops whatever an earlier run left behind in the same state
# folder (by pid files), picks free ports, writes slurm.conf from
# scripts/slurm/slurm.conf.in and waits until every node is idle. Use the
# cluster with SLURM_CONF=<state dir>/etc/slurm.conf (what `env` prints).
# Exit status: 0 done, 1 failed (the reason is printed), 2 bad usage,
# 77 not root (the cluster cannot run; test fixtures report a skip).
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(dirname "$script_dir")

state_dir=${CHORUS_SLURM_STATE_DIR:-$repo_dir/build/slurm-cluster}
nodes=2
cpus_per_node=2
timeout_s=30
node_prefix=n
readonly slurm_packages=(slurmctld slurmd slurm-client munge libpmix-dev)

log() { echo "slurm_cluster: $*" >&2; }
die() { log "error: $*"; exit 1; }
# usage [STATUS]: the header comment above, to stderr unless STATUS is 0.
usage() {
  local status=${1:-2}
  if ((status == 0)); then exec 3>&1; else exec 3>&2; fi
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&3
  exit "$status"
}

is_positive_int() { [[ $1 =~ ^[1-9][0-9]{0,3}$ ]]; }

parse_args() {
  (($# >= 1)) || usage
  command=$1
  shift
  case $command in start | stop | status | env) ;; -h | --help) usage 0 ;;
    *) log "error: unknown command '$command': expected start, stop, status or env"; exit 2 ;;
  esac
  while (($#)); do
    (($# >= 2)) || { log "error: option '$1' needs a value"; exit 2; }
    case $1 in
      --state-dir) state_dir=$2 ;;
      --nodes) is_positive_int "$2" && (($2 <= 64)) ||
        { log "error: --nodes='$2' is invalid: expected an integer from 1 to 64"; exit 2; }
        nodes=$2 ;;
      --cpus-per-node) is_positive_int "$2" && (($2 <= 1024)) ||
        { log "error: --cpus-per-node='$2' is invalid: expected an integer from 1 to 1024"; exit 2; }
        cpus_per_node=$2 ;;
      --timeout) is_positive_int "$2" ||
        { log "error: --timeout='$2' is invalid: expected whole seconds from 1 to 9999"; exit 2; }
        timeout_s=$2 ;;
      *) log "error: unknown option '$1': expected --state-dir, --nodes, --cpus-per-node or --timeout"; exit 2 ;;
    esac
    shift 2
  done
  [[ $state_dir == /* ]] || state_dir=$PWD/$state_dir
  conf=$state_dir/etc/slurm.conf
  munge_dir=$state_dir/munge
}

# Prints the pid in $1 if that process is alive and its command line
# contains $2 (so a pid reused by an unrelated process is never touched).
live_pid() {
  local pid_file=$1 marker=$2 pid
  [[ -r $pid_file ]] || return 1
  pid=$(tr -dc '0-9' <"$pid_file")
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$marker" || return 1
  echo "$pid"
}

# Every daemon of this cluster as "pid_file marker" lines.
daemons() {
  local f
  for f in "$state_dir"/run/slurmd-*.pid; do [[ -e $f ]] && echo "$f $conf"; done
  echo "$state_dir/run/slurmctld.pid $conf"
  echo "$munge_dir/munged.pid $munge_dir/socket"
}

stop_daemons() {
  local pid_file marker pid pids=() deadline
  while read -r pid_file marker; do
    if pid=$(live_pid "$pid_file" "$marker"); then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done < <(daemons)
  deadline=$((SECONDS + 10))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      log "pid $pid ignored SIGTERM for 10 s: sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  rm -f "$state_dir"/run/*.pid "$munge_dir/munged.pid"
  ((${#pids[@]} == 0)) || log "stopped ${#pids[@]} daemons of $state_dir"
}

# Cancels the cluster's jobs and waits (bounded) for their steps to end, so
# that no slurmstepd or task outlives the daemons.
cancel_jobs() {
  [[ -r $conf ]] && live_pid "$state_dir/run/slurmctld.pid" "$conf" >/dev/null || return 0
  local jobs deadline=$((SECONDS + 10))
  jobs=$(SLURM_CONF=$conf timeout 5 squeue -h -o %i 2>/dev/null || true)
  [[ -n $jobs ]] || return 0
  log "cancelling jobs: $(echo $jobs)"
  SLURM_CONF=$conf timeout 5 scancel $jobs 2>/dev/null || true
  while ((SECONDS < deadline)); do
    jobs=$(SLURM_CONF=$conf timeout 5 squeue -h -t all -o '%i %t' 2>/dev/null | awk '$2 != "CA" && $2 != "CD" && $2 != "F" && $2 != "TO"' || true)
    [[ -n $jobs ]] || return 0
    sleep 0.2
  done
  log "warning: jobs still ending after 10 s: $(echo $jobs)"
}

cmd_stop() {
  [[ -d $state_dir ]] || { log "nothing to stop: $state_dir does not exist"; return 0; }
  cancel_jobs
  stop_daemons
}

check_prerequisites() {
  if [[ $(id -u) -ne 0 ]]; then
    log "not running as root (uid $(id -u)): slurmd must run as root to start jobs, so no cluster can be started"
    exit 77
  fi
  local missing=() tool
  for tool in munged slurmctld slurmd srun sbatch sinfo squeue scancel; do
    command -v "$tool" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  ((${#missing[@]} == 0)) && [[ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so || -n $(find /usr/lib* -name mpi_pmix.so -print -quit 2>/dev/null) ]] && return 0
  log "missing Slurm pieces (${missing[*]:-the PMIx plugin mpi_pmix.so}): installing ${slurm_packages[*]}"
  command -v apt-get >/dev/null 2>&1 ||
    die "apt-get is not available: install ${slurm_packages[*]} (Slurm 22.05 with PMIx) by hand"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${slurm_packages[@]}" >&2 ||
    { DEBIAN_FRONTEND=noninteractive apt-get update >&2 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${slurm_packages[@]}" >&2; } ||
    die "could not install ${slurm_packages[*]} with apt-get"
}

port_in_use() { ss -Htln "sport = :$1" 2>/dev/null | grep -q .; }

# Picks a free slurmctld port followed by free ports for every slurmd,
# starting from a base derived from the state folder so that two clusters
# (two build trees) rarely probe the same ports.
pick_ports() {
  local base p ok
  base=$((17000 + $(echo -n "$state_dir" | cksum | cut -d' ' -f1) % 400 * 20))
  for ((p = base; p < base + 2000; p += nodes + 1)); do
    ok=1
    for ((i = 0; i <= nodes; i++)); do port_in_use $((p + i)) && { ok=0; break; }; done
    if ((ok)); then ctld_port=$p; node_port_first=$((p + 1)); node_port_last=$((p + nodes)); return 0; fi
  done
  die "no $((nodes + 1)) consecutive free TCP ports between $base and $((base + 2000))"
}

start_munge() {
  # munged insists on folders owned by its user: the key private (0700/0400),
  # the socket's folder open to every client (0755).
  mkdir -p "$munge_dir/key"
  if [[ ! -s $munge_dir/key/munge.key ]]; then
    dd if=/dev/urandom of="$munge_dir/key/munge.key" bs=1024 count=1 status=none
  fi
  chown -R munge:munge "$munge_dir"
  chmod 755 "$munge_dir"
  chmod 700 "$munge_dir/key"
  chmod 400 "$munge_dir/key/munge.key"
  runuser -u munge -- munged --key-file="$munge_dir/key/munge.key" --socket="$munge_dir/socket" \
    --pid-file="$munge_dir/munged.pid" --log-file="$munge_dir/munged.log" \
    --seed-file="$munge_dir/munged.seed" ||
    die "munged did not start: $(tail -n 5 "$munge_dir/munged.log" 2>/dev/null)"
}

write_conf() {
  sed -e "s|@HOSTNAME@|$(hostname)|g" -e "s|@CTLD_PORT@|$ctld_port|g" \
    -e "s|@MUNGE_SOCKET@|$munge_dir/socket|g" -e "s|@STATE_DIR@|$state_dir|g" \
    -e "s|@NODE_PREFIX@|$node_prefix|g" -e "s|@NODES@|$nodes|g" \
    -e "s|@NODE_PORT_FIRST@|$node_port_first|g" -e "s|@NODE_PORT_LAST@|$node_port_last|g" \
    -e "s|@CPUS_PER_NODE@|$cpus_per_node|g" "$script_dir/slurm/slurm.conf.in" >"$conf"
  ! grep -v '^#' "$conf" | grep -n '@[A-Z_]*@' >&2 || die "unreplaced placeholders in $conf"
  # Slurm's plugin stack config (/etc/slurm/plugstack.conf) is the system's;
  # an empty one keeps this cluster independent of it.
  : >"$state_dir/etc/plugstack.conf"
  echo "PlugStackConfig=$state_dir/etc/plugstack.conf" >>"$conf"
}

print_failure_logs() {
  local f
  for f in "$state_dir"/log/*.log "$munge_dir/munged.log"; do
    [[ -s $f ]] || continue
    log "--- last lines of $f"
    tail -n 8 "$f" >&2
  done
}

wait_until_idle() {
  local deadline=$((SECONDS + timeout_s)) states="" i
  while ((SECONDS < deadline)); do
    # The pid file appears once slurmctld has forked; a dead pid means it quit.
    if [[ -e $state_dir/run/slurmctld.pid ]] && ! live_pid "$state_dir/run/slurmctld.pid" "$conf" >/dev/null; then
      print_failure_logs
      die "slurmctld exited during start-up"
    fi
    states=$(SLURM_CONF=$conf timeout 5 sinfo -h -N -o '%N %t' 2>/dev/null || true)
    if [[ $(grep -c ' idle$' <<<"$states") -eq $nodes ]]; then return 0; fi
    sleep 0.1
  done
  print_failure_logs
  die "the nodes were not idle within ${timeout_s} s (sinfo says: ${states:-nothing})"
}

cmd_start() {
  check_prerequisites
  [[ -r $script_dir/slurm/slurm.conf.in ]] || die "missing template $script_dir/slurm/slurm.conf.in"
  # Whatever a crashed earlier run left in this state folder goes first.
  if [[ -d $state_dir ]]; then cmd_stop; fi
  rm -rf "$state_dir"
  mkdir -p "$state_dir"/{etc,run,log,ctld}
  for ((i = 1; i <= nodes; i++)); do mkdir -p "$state_dir/spool/$node_prefix$i" "$state_dir/tmp/$node_prefix$i"; done
  pick_ports
  write_conf
  start_munge
  export SLURM_CONF=$conf
  # -i: ignore any saved state; daemons fork into the background.
  slurmctld -i -f "$conf" || { print_failure_logs; die "slurmctld did not start"; }
  for ((i = 1; i <= nodes; i++)); do
    slurmd -N "$node_prefix$i" -f "$conf" || { print_failure_logs; die "slurmd -N $node_prefix$i did not start"; }
  done
  wait_until_idle
  log "cluster up in ${SECONDS} s: $nodes nodes x $cpus_per_node CPUs, slurmctld on port $ctld_port"
  echo "export SLURM_CONF=$conf"
}

cmd_status() {
  local pid_file marker pid down=0
  while read -r pid_file marker; do
    if pid=$(live_pid "$pid_file" "$marker"); then
      echo "running: $(basename "$pid_file" .pid) (pid $pid)"
    else
      echo "stopped: $(basename "$pid_file" .pid)"
      down=1
    fi
  done < <(daemons)
  if ((down == 0)); then SLURM_CONF=$conf timeout 5 sinfo -N || down=1; fi
  return $down
}

parse_args "$@"
PATH=$PATH:/usr/sbin:/sbin
case $command in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) echo "export SLURM_CONF=$conf" ;;
esac
