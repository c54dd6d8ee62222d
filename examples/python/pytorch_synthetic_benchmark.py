#!/usr/bin/python3
"""Training throughput on synthetic data with chorus.torch, as Horovod's
examples/pytorch/pytorch_synthetic_benchmark.py measures it (samples/s per
rank and in total), on the CPU.

Models: `ref`, the reference MLP of train_mnist (784-128-10); `25m`, a
~24M-parameter MLP (784-4096-4096-1024-10); or any torchvision model name
(resnet50, ...) where torchvision is installed (Debian's python3-torch
comes without it). Adam (lr 1e-3), a pool of 8 random batches per rank, one
torch thread per rank: the same model, batch and data as the C++
chorus_train_bench and the DistributedDataParallel peer of
test/bench/training/ddp_baseline.py.

--sync-bound runs the same script without any gradient exchange: each rank
trains on its own and all ranks meet at one hvd.barrier() per step, so a step
lasts as long as the slowest rank's. That is the bound of any synchronous
data-parallel training of this Python loop; the distributed run's ratio to
it is what the exchange costs.

    chorusrun -np 2 /usr/bin/python3 examples/python/pytorch_synthetic_benchmark.py --model ref
    chorusrun -np 2 /usr/bin/python3 examples/python/pytorch_synthetic_benchmark.py --model ref --sync-bound
"""
import argparse
import json
import sys
import time
import timeit

import torch
import torch.nn as nn
import torch.nn.functional as F

import chorus.torch as hvd

MLPS = {"ref": [784, 128, 10], "25m": [784, 4096, 4096, 1024, 10]}


def positive(low):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError("'%s' is not an integer >= %d" % (text, low))
        return value
    return parse


def parse_args(argv):
    p = argparse.ArgumentParser(description="PyTorch synthetic benchmark on chorus.torch",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default="ref",
                   help="ref (784-128-10), 25m (784-4096-4096-1024-10), an MLP's widths like "
                        "784-256-10, or a torchvision model name")
    p.add_argument("--batch-size", type=positive(1), default=64, help="input batch size per rank")
    p.add_argument("--num-warmup-batches", type=positive(0), default=10,
                   help="number of warm-up batches that don't count towards the benchmark")
    p.add_argument("--num-batches-per-iter", type=positive(1), default=10,
                   help="number of batches per benchmark iteration")
    p.add_argument("--num-iters", type=positive(1), default=10, help="number of benchmark iterations")
    p.add_argument("--fp16-allreduce", action="store_true", help="use fp16 compression during allreduce")
    p.add_argument("--use-adasum", action="store_true", help="use the Adasum algorithm to do reduction")
    p.add_argument("--sync-bound", action="store_true",
                   help="no gradient exchange: every rank trains on its own and all meet at one "
                        "barrier per step (the bound of synchronous data parallelism)")
    p.add_argument("--threads", type=positive(1), default=1, help="torch threads per rank")
    p.add_argument("--json", action="store_true",
                   help="rank 0 also prints one JSON line with the global samples/s over all timed steps")
    args = p.parse_args(argv)
    if args.sync_bound and (args.fp16_allreduce or args.use_adasum):
        p.error("--sync-bound exchanges no gradients: it cannot be combined with --fp16-allreduce "
                "or --use-adasum")
    return args


def mlp(widths):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def make_model(name):
    """(model, input shape of one sample, number of classes)."""
    widths = MLPS.get(name)
    if widths is None and all(w.isdigit() and int(w) > 0 for w in name.split("-")) and "-" in name:
        widths = [int(w) for w in name.split("-")]
    if widths is not None:
        return mlp(widths), (widths[0],), widths[-1]
    try:
        from torchvision import models
    except ImportError:
        raise SystemExit("pytorch_synthetic_benchmark.py: error: unknown model '%s': expected ref, 25m or "
                         "an MLP's widths like 784-256-10 (torchvision, for its models, is not installed)"
                         % name)
    if not hasattr(models, name):
        raise SystemExit("pytorch_synthetic_benchmark.py: error: unknown model '%s': not ref, 25m, an MLP's "
                         "widths or a torchvision model" % name)
    return getattr(models, name)(), (3, 224, 224), 1000


def main(argv):
    args = parse_args(argv)
    hvd.init()
    # Read once: after the last collective another rank may already have shut
    # down, and then Chorus refuses calls on this one (rank() included).
    rank, size = hvd.rank(), hvd.size()
    torch.set_num_threads(args.threads)

    torch.manual_seed(1234)
    model, sample_shape, classes = make_model(args.model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    if not args.sync_bound:
        compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                             compression=compression,
                                             op=hvd.Adasum if args.use_adasum else hvd.Average)
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    # Each rank's own synthetic batches.
    torch.manual_seed(99 + rank)
    pool = 8
    data = torch.randn(pool, args.batch_size, *sample_shape)
    target = torch.randint(classes, (pool, args.batch_size))
    step_count = [0]

    def benchmark_step():
        b = step_count[0] % pool
        step_count[0] += 1
        optimizer.zero_grad()
        F.cross_entropy(model(data[b]), target[b]).backward()
        optimizer.step()
        if args.sync_bound:
            hvd.barrier()

    def log(text):
        if rank == 0:
            print(text, flush=True)

    log("Model: %s (%d parameters)" % (args.model, sum(p.numel() for p in model.parameters())))
    log("Batch size: %d" % args.batch_size)
    log("Number of CPUs: %d%s" % (size, ", sync bound (no gradient exchange)" if args.sync_bound else ""))
    log("Running warmup...")
    timeit.timeit(benchmark_step, number=args.num_warmup_batches)

    log("Running benchmark...")
    rates = []
    hvd.barrier()
    start = timeit.default_timer()
    cpu_start = time.process_time()
    for i in range(args.num_iters):
        t = timeit.timeit(benchmark_step, number=args.num_batches_per_iter)
        rate = args.batch_size * args.num_batches_per_iter / t
        log("Iter #%d: %.1f samples/sec per CPU" % (i, rate))
        rates.append(rate)
    hvd.barrier()
    seconds = timeit.default_timer() - start
    # CPU time of the whole process (training and Chorus's threads) per step,
    # the highest rank's: what the step costs whatever the machine's load.
    cpu = hvd.allreduce(torch.tensor([time.process_time() - cpu_start]), op=hvd.Max, name="cpu_seconds").item()

    mean = sum(rates) / len(rates)
    conf = 1.96 * (sum((r - mean) ** 2 for r in rates) / len(rates)) ** 0.5
    log("Samples/sec per CPU: %.1f +-%.1f" % (mean, conf))
    log("Total samples/sec on %d CPU(s): %.1f +-%.1f" % (size, size * mean, size * conf))
    steps = args.num_iters * args.num_batches_per_iter
    if args.json:
        log(json.dumps({"mode": "python_sync_bound" if args.sync_bound else "python_chorus", "np": size,
                        "model": args.model, "parameters": sum(p.numel() for p in model.parameters()),
                        "batch_per_rank": args.batch_size, "steps": steps, "seconds": seconds,
                        "samples_per_second": args.batch_size * steps * size / seconds,
                        "cpu_ms_per_step": 1e3 * cpu / steps}))
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
