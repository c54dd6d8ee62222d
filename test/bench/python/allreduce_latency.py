#!/usr/bin/python3
"""Latency of one small allreduce from Python through chorus.torch, submit to
wait, measured as chorus_bench measures the C++ API's (test/bench/
bench_measure.cc, Bench::latency): every round the ranks meet at MPI's own
barrier (MPI_Barrier on MPI_COMM_WORLD, through mpi4py), then each times one
in-place allreduce of a float32 tensor of --bytes; a round counts as its
slowest rank's time; median and minimum over --repeats rounds after
--warmup. Checks the sum. Rank 0 prints one JSON line.
--call async (default): hvd.synchronize(hvd.allreduce_async_(...)), the
pattern of a gradient hook; --call blocking: hvd.allreduce_(...).
--barrier chorus: the ranks meet at hvd.barrier() instead, which lets them
leave further apart than MPI_Barrier does, and that spread is timed too
(docs/MEASUREMENTS.md, "A 4 KiB allreduce from Python").
    chorusrun -np 2 /usr/bin/python3 allreduce_latency.py --bytes 4096 --repeats 1000
"""
import argparse
import json
import sys
import time

import torch

import chorus.torch as hvd


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bytes", type=int, default=4096)
    p.add_argument("--repeats", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--call", choices=("async", "blocking"), default="async")
    p.add_argument("--barrier", choices=("mpi", "chorus"), default="mpi")
    a = p.parse_args(argv)
    if a.bytes < 4 or a.bytes % 4 or a.repeats < 1 or a.warmup < 0:
        p.error("--bytes must be a positive multiple of 4, --repeats >= 1, --warmup >= 0")
    hvd.init()
    torch.set_num_threads(1)
    if a.barrier == "mpi":
        # Chorus initialised MPI and finalises it at shutdown.
        import mpi4py
        mpi4py.rc.initialize = False
        mpi4py.rc.finalize = False
        from mpi4py import MPI
        barrier = MPI.COMM_WORLD.Barrier
    else:
        barrier = hvd.barrier
    n = a.bytes // 4
    tensor = torch.zeros(n)
    if a.call == "async":
        def allreduce():
            hvd.synchronize(hvd.allreduce_async_(tensor, name="latency", op=hvd.Sum))
    else:
        def allreduce():
            hvd.allreduce_(tensor, name="latency", op=hvd.Sum)
    samples = []
    for round_ in range(a.warmup + a.repeats):
        tensor.fill_(hvd.rank() + 1)
        barrier()
        start = time.perf_counter()
        allreduce()
        elapsed = time.perf_counter() - start
        if round_ >= a.warmup:
            samples.append(elapsed)
    expected = hvd.size() * (hvd.size() + 1) / 2
    if not torch.all(tensor == expected):
        print("allreduce_latency: rank %d: wrong sum %s, expected %s" % (hvd.rank(), tensor[0].item(), expected),
              file=sys.stderr)
        return 1
    # A round is as slow as its slowest rank.
    slowest = hvd.allreduce(torch.tensor(samples, dtype=torch.float64), op=hvd.Max, name="latency.samples")
    ordered = sorted(slowest.tolist())
    k = len(ordered)
    median = ordered[k // 2] if k % 2 else 0.5 * (ordered[k // 2 - 1] + ordered[k // 2])
    if hvd.rank() == 0:
        print(json.dumps({"mode": "python_allreduce_latency", "call": a.call, "barrier": a.barrier, "np": hvd.size(), "bytes": a.bytes,
                          "repeats": a.repeats, "median_seconds": median, "min_seconds": ordered[0]}), flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
