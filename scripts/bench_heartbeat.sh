#!/usr/bin/env bash
# What the heartbeat costs when all is well: chorus_bench's idle window (every
# rank asleep; the whole process's CPU and the heartbeat thread's, from /proc)
# and its 4 KiB allreduce latency, with the heartbeat off
# (CHORUS_HEARTBEAT_TIMEOUT_SECONDS=0), at its default (30 s) and at the
# tests' short timeout (3 s: four times the datagrams), alternating the three
# in every round (off, 30, 3, then 3, 30, off, ...) so that the machine's
# noise falls on all of them. Prints the median and minimum of each over the
# rounds, with the load average.
#   scripts/bench_heartbeat.sh [--rounds N] [--np N] [--idle-seconds S] [--build-dir DIR] [--json PATH]
# Defaults: 6 rounds, np 2, a 10 s idle window. --json also writes every
# round's figures (scripts/bench_report.sh's section (g) reads them). Run it
# on a quiet machine: check `uptime` first (other builds make figures noisy).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=6 np=2 idle=10 build_dir="$root/build" json=""
while (($#)); do
  case "$1" in
    --rounds) rounds=$2 ;;
    --np) np=$2 ;;
    --idle-seconds) idle=$2 ;;
    --build-dir) build_dir=$2 ;;
    --json) json=$2 ;;
    -h | --help) sed -n '2,13s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "bench_heartbeat: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift 2
done
[[ $rounds =~ ^[1-9][0-9]*$ && $np =~ ^[1-9][0-9]*$ ]] || { echo "bench_heartbeat: --rounds and --np take positive integers" >&2; exit 2; }
bench=$build_dir/test/bench/chorus_bench
[[ -x $bench ]] || { echo "bench_heartbeat: $bench is missing: scripts/build.sh chorus_bench" >&2; exit 1; }

results=$(mktemp -d /tmp/bench-heartbeat-XXXXXX)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "bench_heartbeat: $rounds rounds, np $np, idle window $idle s; results in $results"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
  settings=(0 30 3)
  ((round % 2 == 0)) && settings=(3 30 0)
  for timeout in "${settings[@]}"; do
    CHORUS_HEARTBEAT_TIMEOUT_SECONDS=$timeout mpirun -np "$np" --oversubscribe -x CHORUS_HEARTBEAT_TIMEOUT_SECONDS \
      "$bench" --sizes 4KiB --repeats 5 --latency-repeats 2000 --idle-seconds "$idle" \
      --json "$results/hb$timeout-round$round.json" >"$results/hb$timeout-round$round.log" 2>&1 ||
      { cat "$results/hb$timeout-round$round.log"; exit 1; }
  done
  echo "round $round done (load $(cut -d' ' -f1 /proc/loadavg))"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$results" "$np" "$rounds" "$idle" "$json" <<'PY'
import glob, json, statistics, sys
results, np, rounds, idle, json_path = sys.argv[1:]
summary = {"np": int(np), "rounds": int(rounds), "idle_seconds": float(idle), "latency_repeats": 2000, "settings": []}
print(f"\n{'heartbeat':>14} {'4 KiB latency median (min)':>28} {'raw MPI median':>15} "
      f"{'idle process CPU median (max)':>30} {'heartbeat thread CPU':>21} {'its wake-ups/s':>15}")
for timeout in ("0", "30", "3"):
    runs = [json.load(open(f)) for f in sorted(glob.glob(f"{results}/hb{timeout}-round*.json"))]
    lat = [r["latency"]["chorus"]["median_s"] * 1e6 for r in runs]
    lat_min = min(r["latency"]["chorus"]["min_s"] * 1e6 for r in runs)
    mpi = [r["latency"]["mpi"]["median_s"] * 1e6 for r in runs]
    idle = [r["idle_cpu"]["max_percent"] for r in runs]
    hb = [r["idle_cpu"].get("heartbeat_thread", {}).get("max_percent") for r in runs]
    wakes = [r["idle_cpu"].get("heartbeat_thread", {}).get("max_wakeups") for r in runs]
    seconds = runs[0]["idle_cpu"]["seconds"]
    name = "off" if timeout == "0" else f"timeout {timeout} s"
    hb_text = "-" if None in hb else f"{statistics.median(hb):.4f}%"
    wake_text = "-" if None in wakes else f"{statistics.median(wakes) / seconds:.2f}"
    print(f"{name:>14} {statistics.median(lat):>18.2f} us ({lat_min:.2f}) {statistics.median(mpi):>12.2f} us "
          f"{statistics.median(idle):>20.3f}% ({max(idle):.3f}%) {hb_text:>21} {wake_text:>15}")
    summary["settings"].append({
        "timeout_seconds": float(timeout),
        "latency_median_s": [r["latency"]["chorus"]["median_s"] for r in runs],
        "latency_min_s": [r["latency"]["chorus"]["min_s"] for r in runs],
        "mpi_latency_median_s": [r["latency"]["mpi"]["median_s"] for r in runs],
        "idle_percent": idle,
        "heartbeat_percent": None if None in hb else hb,
        "heartbeat_wakeups": None if None in wakes else wakes,
        "load_average": [r.get("load_average") for r in runs]})
if json_path:
    json.dump(summary, open(json_path, "w"), indent=1)
    print(f"JSON written to {json_path}")
PY
