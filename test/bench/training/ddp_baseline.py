#!/usr/bin/python3
"""PyTorch DistributedDataParallel (gloo) peer of chorus_train_bench.

Same MLP, Adam(1e-3), batch per rank, synthetic batches and step counts as
train_bench.cc; prints one JSON line from rank 0 with global samples/s.
Starts its own ranks (Debian's torch 1.13 `torch.distributed.run` fails on
Python 3.11), each with one intra-op thread.
  ddp_baseline.py --np 2 --layers 784-128-10 --batch-size 64 --warmup-steps 20 --steps 200
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--layers", default="784-128-10")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--warmup-steps", type=int, default=20)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    widths = args.layers.split("-")
    if len(widths) < 2 or not all(w.isdigit() and int(w) > 0 for w in widths):
        p.error(f"--layers: expected positive widths like 784-128-10, got '{args.layers}'")
    if args.np < 1 or args.batch_size < 1 or args.steps < 1 or args.warmup_steps < 0:
        p.error("--np, --batch-size and --steps must be >= 1, --warmup-steps >= 0")
    return args


def run_rank(args):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=args.rank, world_size=args.np)
    widths = [int(w) for w in args.layers.split("-")]
    torch.manual_seed(1234)
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(nn.ReLU())
    model = nn.parallel.DistributedDataParallel(nn.Sequential(*layers))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    torch.manual_seed(99 + args.rank)
    pool = 8
    inputs = torch.randn(pool, args.batch_size, widths[0])
    labels = torch.randint(widths[-1], (pool, args.batch_size))
    loss_fn = nn.CrossEntropyLoss()

    def step(s):
        b = s % pool
        optimizer.zero_grad()
        loss_fn(model(inputs[b]), labels[b]).backward()
        optimizer.step()

    for s in range(args.warmup_steps):
        step(s)
    dist.barrier()
    start = time.perf_counter()
    for s in range(args.steps):
        step(args.warmup_steps + s)
    dist.barrier()
    seconds = time.perf_counter() - start
    if args.rank == 0:
        params = sum(p.numel() for p in model.parameters())
        print(json.dumps({"mode": "ddp_gloo", "np": args.np, "layers": args.layers, "parameters": params,
                          "batch_per_rank": args.batch_size, "steps": args.steps, "seconds": seconds,
                          "samples_per_second": args.batch_size * args.steps * args.np / seconds}), flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv):
    args = parse_args(argv)
    if args.rank >= 0:
        run_rank(args)
        return 0
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(args.np), OMP_NUM_THREADS="1")
    base = [sys.executable, os.path.abspath(__file__)] + argv
    procs = [subprocess.Popen(base + ["--rank", str(r)], env=dict(env, RANK=str(r))) for r in range(args.np)]
    try:
        codes = [p.wait(timeout=1800) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    failed = [r for r, c in enumerate(codes) if c != 0]
    if failed:
        print(f"ddp_baseline: error: rank(s) {failed} exited with {[codes[r] for r in failed]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
