"""SyncBatchNorm against torch.nn.BatchNorm*d run in this one process on the
global batch (every rank's batch concatenated; each rank can rebuild any
rank's): outputs, running statistics and the input, weight and bias
gradients, with uneven batches per rank.

Tolerances. Every compared value is the exact result of a few sums over at
most n = (global samples x spatial size) terms, followed by a handful of
elementwise operations. Recursive summation of n terms errs by at most
(n - 1) * u * sum|terms| (Higham, Accuracy and Stability of Numerical
Algorithms, 2nd ed., eq. 4.4), and each later operation adds a relative u.
Inputs here have |x| <= ~8 (a few standard deviations of unit-scale
channels with offsets <= 3, so |x - mean| / std stays below ~10 and the
variance's relative error is not amplified by cancellation). So both this
implementation and torch's kernel are within c * n * u of the exact values
with c = 64 covering the magnitudes (about 10 ** 2 for squared deviations
divided by a variance of >= 0.5) and the elementwise roundings; the
difference of the two is at most twice that. In float64 that is ~1e-12:
any error of the method (a wrong count, a per-rank instead of a global
statistic) is orders of magnitude larger."""
import pytest
import torch

import chorus.torch as hvd

F64 = torch.float64
BN = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d, 4: torch.nn.BatchNorm2d, 5: torch.nn.BatchNorm3d}


def tolerance(n, dtype):
    return 2 * 64 * n * torch.finfo(dtype).eps


def batch(r, rows, shape, seed):
    """Rank r's batch: rows samples of `shape` (C, ...), each channel with its
    own offset and scale, the offset differing between ranks (so that every
    rank's mean differs from the global one)."""
    g = torch.Generator().manual_seed(100 * seed + r)
    channels = shape[0]
    x = torch.randn((rows,) + tuple(shape), generator=g, dtype=F64)
    scale = torch.linspace(0.75, 1.5, channels, dtype=F64).view([1, -1] + [1] * (len(shape) - 1))
    offset = (torch.arange(channels, dtype=F64) * 0.5 - r).view([1, -1] + [1] * (len(shape) - 1))
    return x * scale + offset


def upstream(r, rows, shape, seed):
    g = torch.Generator().manual_seed(100 * seed + 50 + r)
    return torch.randn((rows,) + tuple(shape), generator=g, dtype=F64)


def make_pair(channels, dims, dtype=F64, **kwargs):
    """SyncBatchNorm and the reference module, with the same non-trivial
    weight and bias."""
    sync = hvd.SyncBatchNorm(channels, **{k: v for k, v in kwargs.items()})
    ref = BN[dims](channels, **{k: v for k, v in kwargs.items() if k != "process_set"})
    if sync.affine:
        with torch.no_grad():
            w = torch.linspace(0.5, 2.0, channels, dtype=F64)
            b = torch.linspace(-1.0, 1.0, channels, dtype=F64)
            for m in (sync, ref):
                m.weight.copy_(w)
                m.bias.copy_(b)
    return sync.to(dtype), ref.to(F64)


def run_step(sync, ref, rank, members, rows, shape, seed, dtype=F64, process_set=hvd.global_process_set):
    """One forward and backward of both modules. Returns pairs (name, got,
    expected, n) to compare; every collective has run by then, so that a
    failed comparison on one rank leaves no other rank waiting."""
    xs = [batch(r, rows[i], shape, seed) for i, r in enumerate(members)]
    gs = [upstream(r, rows[i], shape, seed) for i, r in enumerate(members)]
    me = members.index(rank)
    x = xs[me].to(dtype).clone().requires_grad_()
    out = sync(x)
    (out.double() * gs[me]).sum().backward()
    x_ref = torch.cat(xs).requires_grad_()
    out_ref = ref(x_ref)
    (out_ref * torch.cat(gs)).sum().backward()
    begin = sum(rows[:me])
    n = sum(rows) * int(torch.tensor(shape[1:]).prod())
    pairs = [("output", out, out_ref[begin:begin + rows[me]].detach()),
             ("input grad", x.grad, x_ref.grad[begin:begin + rows[me]])]
    # Each rank's weight and bias gradients are its share; their sum over the
    # set is the global batch's gradient.
    if sync.affine:
        for name in ("weight", "bias"):
            total = hvd.allreduce(getattr(sync, name).grad.double(), op=hvd.Sum, process_set=process_set)
            pairs.append((name + " grad", total, getattr(ref, name).grad))
    if sync.track_running_stats:
        pairs += [("running_mean", sync.running_mean, ref.running_mean),
                  ("running_var", sync.running_var, ref.running_var)]
        assert int(sync.num_batches_tracked) == int(ref.num_batches_tracked)
    for p in list(sync.parameters()) + list(ref.parameters()):
        p.grad = None
    return [(name, got, expected, n) for name, got, expected in pairs]


def assert_close(got, expected, n, dtype=F64, what=""):
    tol = tolerance(n, dtype)
    torch.testing.assert_close(got.double(), expected.double(), rtol=tol, atol=tol,
                               msg=lambda m: what + ": " + m)


def assert_all_close(results, dtype=F64):
    for step, pairs in enumerate(results):
        for name, got, expected, n in pairs:
            assert_close(got, expected, n, dtype, "step %d, %s" % (step, name))


@pytest.mark.parametrize("shape", [(4,), (3, 5), (2, 3, 4), (2, 2, 3, 2)], ids=["1d", "1d-length", "2d", "3d"])
def test_training_matches_batch_norm_on_the_global_batch(rank, size, shape):
    members = list(range(size))
    sync, ref = make_pair(shape[0], len(shape) + 1)
    # Uneven batches, different at each step.
    results = [run_step(sync, ref, rank, members, [(r + step) % size + 1 for r in members], shape, seed=step)
               for step in range(3)]
    # Eval mode: each rank alone, with the running statistics.
    sync.eval()
    ref.eval()
    x = batch(rank, 2 + rank, shape, seed=9)
    results.append([("eval output", sync(x), ref(x), x.numel())])
    assert_all_close(results)


def test_a_rank_without_samples(rank, size):
    # Rank 0 has no samples: it still takes part, and contributes nothing.
    members = list(range(size))
    sync, ref = make_pair(3, 4)
    results = [run_step(sync, ref, rank, members, [r * 2 for r in members], (3, 2, 2), seed=11)]
    assert results[0][0][1].shape == (rank * 2, 3, 2, 2)
    assert_all_close(results)


@pytest.mark.parametrize("kwargs", [dict(momentum=None), dict(affine=False), dict(track_running_stats=False),
                                    dict(eps=0.5, momentum=0.3)],
                         ids=["cumulative", "no-affine", "untracked", "eps-momentum"])
def test_options_as_batch_norm(rank, size, kwargs):
    members = list(range(size))
    sync, ref = make_pair(3, 3, **kwargs)
    rows = [r + 1 for r in members]
    results = [run_step(sync, ref, rank, members, rows, (3, 4), seed=20 + step) for step in range(3)]
    # Eval mode: the running statistics, or without them still the global
    # batch's (a collective, as in Horovod and torch).
    sync.eval()
    ref.eval()
    results.append(run_step(sync, ref, rank, members, rows, (3, 4), seed=29))
    assert_all_close(results)


def test_float32_against_the_float64_reference(rank, size):
    # float32 (computed in float32, combined in float64) against the float64
    # reference: within the float32 bound.
    members = list(range(size))
    sync, ref = make_pair(4, 4, dtype=torch.float32)
    results = [run_step(sync, ref, rank, members, [r + 2 for r in members], (4, 3, 3), seed=30,
                        dtype=torch.float32)]
    assert [got.dtype for _, got, _, _ in results[0]] == \
        [torch.float32, torch.float32, torch.float64, torch.float64, torch.float32, torch.float32]
    assert_all_close(results, torch.float32)


def test_process_set(rank, size):
    # The set's ranks normalize together; the others are not involved.
    members = [0, size - 1]
    ps = hvd.add_process_set(members)
    try:
        if rank in members:
            sync, ref = make_pair(2, 4, process_set=ps)
            results = [run_step(sync, ref, rank, members, [1, 3], (2, 2, 3), seed=40, process_set=ps)]
    finally:
        hvd.remove_process_set(ps)
    if rank in members:
        assert_all_close(results)


def test_model_with_sync_batch_norm_and_distributed_optimizer(rank, size):
    # Conv -> SyncBatchNorm -> ReLU -> Linear, trained a step with
    # DistributedOptimizer(op=Sum), equals the same model on the global batch.
    def model(bn):
        torch.manual_seed(5)
        return torch.nn.Sequential(torch.nn.Conv2d(2, 3, 2), bn, torch.nn.ReLU(), torch.nn.Flatten(),
                                   torch.nn.Linear(3 * 2 * 2, 1)).double()
    dist = model(hvd.SyncBatchNorm(3))
    ref = model(torch.nn.BatchNorm2d(3))
    opt = hvd.DistributedOptimizer(torch.optim.SGD(dist.parameters(), lr=0.1),
                                   named_parameters=dist.named_parameters(), op=hvd.Sum)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    rows = [r + 1 for r in range(size)]
    xs = [batch(r, rows[r], (2, 3, 3), seed=50) for r in range(size)]
    dist(xs[rank]).sum().backward()
    opt.step()
    ref(torch.cat(xs)).sum().backward()
    ref_opt.step()
    n = sum(rows) * 4 * 8  # the convolution's sums of 8 products add to each term
    for (name, p), q in zip(dist.named_parameters(), ref.parameters()):
        tol = tolerance(n, F64)
        torch.testing.assert_close(p, q, rtol=tol, atol=tol, msg=name)


def test_bad_input(rank, size):
    sync = hvd.SyncBatchNorm(3).double()
    with pytest.raises(ValueError, match=r"expected at least 2D input \(N, C, ...\), got 1D input"):
        sync(torch.zeros(3, dtype=F64))
    with pytest.raises(ValueError, match=r"expected 3 channels \(dimension 1 of the input\), got input of "
                                         r"shape \[2, 4\]"):
        sync(torch.zeros(2, 4, dtype=F64))
    with pytest.raises(TypeError, match="SyncBatchNorm input must be a torch.Tensor, got list"):
        sync([1.0, 2.0])
    with pytest.raises(TypeError, match="process_set must be a ProcessSet, got list"):
        hvd.SyncBatchNorm(3, process_set=[0, 1])
    # One value per channel over all ranks: every rank refuses, as
    # BatchNorm refuses a batch of one sample.
    rows = 1 if rank == 0 else 0
    expected = r"more than 1 value per channel when training, got 1 over the process set's ranks " \
               r"\(each rank's: \[%s\]\)" % ", ".join(["1"] + ["0"] * (size - 1))
    with pytest.raises(ValueError, match=expected):
        sync(torch.zeros(rows, 3, dtype=F64))
