#!/usr/bin/python3
"""torch.distributed gloo allreduce benchmark: the gloo peer of chorus_bench.

Runs np processes on this machine (it starts them itself, as ddp_baseline.py
does: Debian's torch 1.13 `torch.distributed.run` fails on Python 3.11), each
with one intra-op thread, and measures with chorus_bench's method:
  a. dist.all_reduce of float32 (sum, in place) for every --sizes size;
  b. a step of 200 allreduces of 4 KiB: all started with async_op=True, then
     all waited (what DDP-style code does), and 200 blocking calls.
Every timed round starts with a barrier and counts as long as its slowest
rank; figures are the median and min over --repeats rounds after --warmup
untimed ones. Before timing, one allreduce of every buffer is checked against
the expected sums. Rank 0 prints a table and, with --json, writes the figures.
  gloo_allreduce_bench.py --np 2 --sizes 4KiB,1MiB --repeats 20 --json out.json
"""
import argparse
import datetime
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

SIZE_UNITS = {"": 1, "K": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GIB": 1 << 30}
DEFAULT_SIZES = "4KiB,64KiB,1MiB,16MiB,64MiB"


def parse_size(text):
    """'64KiB' -> 65536; None when it is not a positive multiple of 4 bytes."""
    m = re.fullmatch(r"([0-9]+)([A-Za-z]*)", text.strip())
    if not m or m.group(2).upper() not in SIZE_UNITS:
        return None
    value = int(m.group(1)) * SIZE_UNITS[m.group(2).upper()]
    return value if value > 0 and value % 4 == 0 else None


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=2, help="number of processes (default 2)")
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=f"comma-separated sizes (default {DEFAULT_SIZES})")
    p.add_argument("--repeats", type=int, default=20, help="timed rounds per measurement (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed rounds first (default 3)")
    p.add_argument("--small-tensors", type=int, default=200, help="tensors in the small step (default 200)")
    p.add_argument("--small-bytes", default="4KiB", help="size of each small tensor (default 4KiB)")
    p.add_argument("--json", default="", help="also write the figures as JSON to this path")
    p.add_argument("--timeout", type=float, default=1800, help="seconds before the ranks are killed")
    p.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    sizes = []
    for item in args.sizes.split(","):
        if not item.strip():
            continue
        value = parse_size(item)
        if value is None:
            p.error(f"--sizes: '{item}' is not a size: expected a positive multiple of 4 bytes, "
                    "as bytes or with a K, KiB, M, MiB, G or GiB suffix (e.g. 4KiB,64KiB,1MiB)")
        sizes.append(value)
    if not sizes:
        p.error("--sizes: no sizes given")
    args.size_list = sizes
    args.small_size = parse_size(args.small_bytes)
    if args.small_size is None:
        p.error(f"--small-bytes: '{args.small_bytes}' is not a positive multiple of 4 bytes")
    if args.np < 1 or args.repeats < 1 or args.warmup < 0 or args.small_tensors < 1 or args.timeout <= 0:
        p.error("--np, --repeats and --small-tensors must be >= 1, --warmup >= 0, --timeout > 0")
    return args


def stats(samples):
    return {"median_s": statistics.median(samples), "min_s": min(samples), "samples": len(samples)}


def busbw(nbytes, seconds, ranks):
    return nbytes / seconds * 2.0 * (ranks - 1) / ranks if seconds > 0 else 0.0


class Rank:
    """One process of the benchmark; all ranks run every method in the same order."""

    def __init__(self, args, torch, dist):
        self.args, self.torch, self.dist = args, torch, dist
        self.rank, self.size = dist.get_rank(), dist.get_world_size()

    def rounds(self, variants):
        """Runs warm-up and timed rounds, every variant once per round (A B A B);
        returns per variant the samples, each the slowest rank's time."""
        dist, torch = self.dist, self.torch
        for _ in range(self.args.warmup):
            for run in variants:
                run()
        local = [[0.0] * self.args.repeats for _ in variants]
        for r in range(self.args.repeats):
            for v, run in enumerate(variants):
                dist.barrier()
                start = time.perf_counter()
                run()
                local[v][r] = time.perf_counter() - start
        slowest = torch.tensor(local, dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        return [row.tolist() for row in slowest]

    def check_sum(self, buf, what):
        """Rank r contributes r + 1 everywhere; the sum is exact in float32."""
        torch, dist = self.torch, self.dist
        buf.fill_(float(self.rank + 1))
        dist.all_reduce(buf)
        expected = self.size * (self.size + 1) / 2
        bad = torch.tensor([0 if bool(torch.all(buf == expected)) else 1], dtype=torch.int32)
        dist.all_reduce(bad)
        if int(bad.item()) != 0:
            raise RuntimeError(f"wrong sum for {what} on {int(bad.item())} rank(s): expected {expected} everywhere")
        buf.zero_()

    def allreduce_sweep(self):
        torch, dist = self.torch, self.dist
        rows = []
        for nbytes in self.args.size_list:
            buf = torch.zeros(nbytes // 4, dtype=torch.float32)
            self.check_sum(buf, f"{nbytes} bytes")
            (samples,) = self.rounds([lambda b=buf: dist.all_reduce(b)])
            s = stats(samples)
            rows.append({"bytes": nbytes, "gloo": s, "gloo_algbw_Bps": nbytes / s["median_s"],
                         "gloo_busbw_Bps": busbw(nbytes, s["median_s"], self.size)})
            if self.rank == 0:
                print(f"{nbytes:>12d} B  median {s['median_s'] * 1e6:12.1f} us  min {s['min_s'] * 1e6:12.1f} us  "
                      f"busbw {rows[-1]['gloo_busbw_Bps'] / 1e9:8.3f} GB/s", flush=True)
            del buf
        return rows

    def small_step(self):
        torch, dist = self.torch, self.dist
        n, nbytes = self.args.small_tensors, self.args.small_size
        bufs = [torch.zeros(nbytes // 4, dtype=torch.float32) for _ in range(n)]
        for i, b in enumerate(bufs):
            self.check_sum(b, f"small tensor {i}")

        def async_then_wait():
            for work in [dist.all_reduce(b, async_op=True) for b in bufs]:
                work.wait()

        def separate():
            for b in bufs:
                dist.all_reduce(b)

        async_samples, separate_samples = self.rounds([async_then_wait, separate])
        result = {"tensors": n, "bytes_each": nbytes, "gloo_async": stats(async_samples),
                  "gloo_separate": stats(separate_samples)}
        if self.rank == 0:
            print(f"{n} x {nbytes} B: async then wait median {result['gloo_async']['median_s'] * 1e3:.3f} ms, "
                  f"{n} blocking calls median {result['gloo_separate']['median_s'] * 1e3:.3f} ms", flush=True)
        return result


def run_rank(args):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=args.rank, world_size=args.np)
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    bench = Rank(args, torch, dist)
    if bench.rank == 0:
        print(f"# gloo_allreduce_bench np={args.np} date={date} host={socket.gethostname()} "
              f"load average={' '.join(load)} torch={torch.__version__}", flush=True)
        print(f"# {args.repeats} timed rounds after {args.warmup} warm-up rounds; each starts with a barrier "
              "and counts as long as its slowest rank", flush=True)
    rows = bench.allreduce_sweep()
    small = bench.small_step()
    if bench.rank == 0 and args.json:
        out = {"benchmark": "gloo_allreduce_bench", "np": args.np, "date": date, "host": socket.gethostname(),
               "load_average": " ".join(load), "torch_version": torch.__version__,
               "glibc_tunables": os.environ.get("GLIBC_TUNABLES", "(unset)"), "repeats": args.repeats,
               "warmup": args.warmup, "allreduce": rows, "small_tensors": small}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
        print(f"JSON written to {args.json}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv):
    args = parse_args(argv)
    if args.rank >= 0:
        try:
            run_rank(args)
        except RuntimeError as e:
            print(f"gloo_allreduce_bench: rank {args.rank}: error: {e}", file=sys.stderr, flush=True)
            return 1
        return 0
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(args.np), OMP_NUM_THREADS="1")
    base = [sys.executable, os.path.abspath(__file__)] + argv
    procs = [subprocess.Popen(base + ["--rank", str(r)], env=dict(env, RANK=str(r))) for r in range(args.np)]
    deadline = time.monotonic() + args.timeout
    codes = []
    try:
        for p in procs:
            codes.append(p.wait(timeout=max(1.0, deadline - time.monotonic())))
    except subprocess.TimeoutExpired:
        print(f"gloo_allreduce_bench: error: ranks still running after {args.timeout:g} s (--timeout); killed",
              file=sys.stderr)
        return 1
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    failed = [r for r, c in enumerate(codes) if c != 0]
    if failed:
        print(f"gloo_allreduce_bench: error: rank(s) {failed} exited with {[codes[r] for r in failed]}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
