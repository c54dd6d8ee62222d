"""Each collective of chorus.torch against a reference computed here from
every rank's input (each rank can rebuild any rank's input)."""
import numpy as np
import pytest
import torch

import chorus.torch as hvd
from conftest import rank_tensor, ulp_rtol

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
SHAPE = (3, 5)


def inputs(size, dtype, seed=0, shape=SHAPE):
    return [rank_tensor(r, shape, dtype, seed=seed) for r in range(size)]


def reference(op, xs):
    # In float64 (exact for these small integers), cast back at the end.
    stack = torch.stack([x.double() for x in xs])
    if op == hvd.Sum:
        out = stack.sum(0)
    elif op == hvd.Average:
        out = stack.mean(0)
    elif op == hvd.Min:
        out = stack.min(0).values
    elif op == hvd.Max:
        out = stack.max(0).values
    else:
        out = stack.prod(0)
    return out


def assert_reduced(out, expected, dtype, op):
    assert out.dtype == dtype
    if op == hvd.Average and not dtype.is_floating_point:
        # Integer averages: Chorus rounds the sum's quotient toward zero, as
        # integer division does.
        expected = torch.trunc(expected)
    if op == hvd.Product and dtype in (torch.uint8, torch.int8, torch.int16):
        # Wraps around like the dtype's own multiplication.
        expected = expected.to(torch.int64).to(dtype).double()
    torch.testing.assert_close(out.double(), expected, rtol=ulp_rtol(dtype) if op == hvd.Average else 0,
                               atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product])
def test_allreduce_ops_and_dtypes(rank, size, dtype, op):
    low, high = (-3, 4) if op == hvd.Product else (-8, 8)
    xs = [rank_tensor(r, SHAPE, dtype, low=low, high=high) for r in range(size)]
    expected = reference(op, xs)
    out = hvd.allreduce(xs[rank], op=op, name="ar.%s.%s" % (dtype, op))
    assert_reduced(out, expected, dtype, op)
    # The input is untouched by the out-of-place form.
    assert torch.equal(xs[rank], rank_tensor(rank, SHAPE, dtype, low=low, high=high))


@pytest.mark.parametrize("dtype", FLOATS)
def test_allreduce_in_place_and_async(rank, size, dtype):
    xs = inputs(size, dtype, seed=1)
    t = xs[rank].clone()
    h = hvd.allreduce_async_(t, op=hvd.Sum, name="inplace")
    out = hvd.synchronize(h)
    assert out is t or out.data_ptr() == t.data_ptr()
    torch.testing.assert_close(t.double(), reference(hvd.Sum, xs), rtol=0, atol=0)
    h = hvd.allreduce_async(xs[rank], name="async")
    while not hvd.poll(h):
        pass
    torch.testing.assert_close(hvd.synchronize(h).double(), reference(hvd.Average, xs),
                               rtol=ulp_rtol(dtype), atol=0)


def test_allreduce_non_contiguous_in_place(rank, size):
    xs = inputs(size, torch.float32, seed=2, shape=(4, 6))
    t = xs[rank].clone().t()  # a transposed view
    hvd.allreduce_(t, op=hvd.Sum)
    torch.testing.assert_close(t, reference(hvd.Sum, xs).float().t(), rtol=0, atol=0)


def test_allreduce_scale_factors(rank, size):
    xs = inputs(size, torch.float64, seed=3)
    out = hvd.allreduce(xs[rank], op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0)
    # Powers of two and small integers: every step is exact in float64.
    torch.testing.assert_close(out, reference(hvd.Sum, xs) * 1.5, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32, torch.int64])
def test_allreduce_scales_integers_in_float64(rank, size, dtype):
    xs = inputs(size, dtype, seed=8)
    out = hvd.allreduce(xs[rank], op=hvd.Sum, prescale_factor=0.75, postscale_factor=1.5)
    # Horovod's integer scaling: each input times 0.75 in float64, truncated
    # to the dtype, summed, then times 1.5 and truncated again.
    pre = [torch.trunc(x.double() * 0.75) for x in xs]
    expected = torch.trunc(sum(pre) * 1.5)
    assert out.dtype == dtype
    torch.testing.assert_close(out.double(), expected, rtol=0, atol=0)


def horovod_integer_average(xs, pre, post, size):
    """Horovod's integer Average with factors: each input times pre in
    float64, truncated; their sum times post / size in float64, truncated
    (one truncation after the sum, not one per step)."""
    summed = sum(torch.trunc(x.double() * pre) for x in xs)
    return torch.trunc(summed * (post / size))


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32])
def test_integer_average_with_factors_truncates_once(rank, size, dtype):
    xs = inputs(size, dtype, seed=9, shape=(64,))
    # post / size is exact in float64 at 2 and 3 ranks (0.75, 0.5).
    expected = horovod_integer_average(xs, 0.75, 1.5, size)
    out = hvd.allreduce(xs[rank], op=hvd.Average, prescale_factor=0.75, postscale_factor=1.5)
    assert out.dtype == dtype
    torch.testing.assert_close(out.double(), expected, rtol=0, atol=0)
    rows = [64 // size + (1 if r < 64 % size else 0) for r in range(size)]
    begin = sum(rows[:rank])
    out = hvd.reducescatter(xs[rank], op=hvd.Average, prescale_factor=0.75, postscale_factor=1.5)
    torch.testing.assert_close(out.double(), expected[begin:begin + rows[rank]], rtol=0, atol=0)


def test_allreduce_average_argument(rank, size):
    xs = inputs(size, torch.float64, seed=4)
    with pytest.warns(DeprecationWarning):
        summed = hvd.allreduce(xs[rank], average=False)
    torch.testing.assert_close(summed, reference(hvd.Sum, xs), rtol=0, atol=0)
    with pytest.raises(ValueError, match="not both"):
        hvd.allreduce(xs[rank], average=True, op=hvd.Sum)


def test_grouped_allreduce(rank, size):
    groups = [inputs(size, torch.float32, seed=10 + i, shape=(i + 1, 3)) for i in range(3)]
    outs = hvd.grouped_allreduce([g[rank] for g in groups], op=hvd.Sum)
    for out, g in zip(outs, groups):
        torch.testing.assert_close(out.double(), reference(hvd.Sum, g), rtol=0, atol=0)
    mine = [g[rank].clone() for g in groups]
    hvd.grouped_allreduce_(mine, op=hvd.Max)
    for out, g in zip(mine, groups):
        torch.testing.assert_close(out.double(), reference(hvd.Max, g), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool])
def test_allgather_variable_rows(rank, size, dtype):
    xs = [rank_tensor(r, (r + 1, 2, 3), torch.int64).to(dtype) for r in range(size)]
    out = hvd.allgather(xs[rank])
    assert torch.equal(out, torch.cat(xs))
    h = hvd.allgather_async(xs[rank], name="ag.async.%s" % dtype)
    assert torch.equal(hvd.synchronize(h), torch.cat(xs))


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool])
def test_broadcast_from_every_root(rank, size, dtype):
    xs = [rank_tensor(r, SHAPE, torch.int64).to(dtype) for r in range(size)]
    for root in range(size):
        out = hvd.broadcast(xs[rank], root)
        assert torch.equal(out, xs[root])
        assert torch.equal(xs[rank], rank_tensor(rank, SHAPE, torch.int64).to(dtype))
        t = xs[rank].clone()
        hvd.broadcast_(t, root)
        assert torch.equal(t, xs[root])


@pytest.mark.parametrize("dtype", [torch.float32, torch.int16])
@pytest.mark.parametrize("shape", [(), (4,)], ids=["rows", "matrix"])
def test_alltoall_with_and_without_splits(rank, size, dtype, shape):
    # Rank r sends (r + i) % 3 + 1 rows to rank i.
    splits = [[(r + i) % 3 + 1 for i in range(size)] for r in range(size)]
    xs = [rank_tensor(r, (sum(splits[r]),) + shape, torch.int64).to(dtype) for r in range(size)]
    pieces = [torch.split(xs[r], splits[r]) for r in range(size)]
    expected = torch.cat([pieces[r][rank] for r in range(size)])
    out, received = hvd.alltoall(xs[rank], splits=torch.tensor(splits[rank], dtype=torch.int32))
    assert torch.equal(out, expected)
    assert received.tolist() == [splits[r][rank] for r in range(size)]
    # Equal parts without splits: rows = 2 * size.
    ys = [rank_tensor(r, (2 * size, 3), torch.int32) for r in range(size)]
    out = hvd.alltoall(ys[rank])
    assert torch.equal(out, torch.cat([ys[r][2 * rank:2 * rank + 2] for r in range(size)]))


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average, hvd.Min, hvd.Max])
def test_reducescatter(rank, size, op):
    rows = 2 * size + 1  # uneven: the first rows % size ranks get one more
    xs = inputs(size, torch.float64, seed=5, shape=(rows, 3))
    full = reference(op, xs)
    counts = [rows // size + (1 if r < rows % size else 0) for r in range(size)]
    begin = sum(counts[:rank])
    out = hvd.reducescatter(xs[rank], op=op)
    torch.testing.assert_close(out, full[begin:begin + counts[rank]], rtol=ulp_rtol(torch.float64),
                               atol=0)
    scaled = hvd.reducescatter(xs[rank], op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.25)
    torch.testing.assert_close(scaled, reference(hvd.Sum, xs)[begin:begin + counts[rank]] * 0.5,
                               rtol=0, atol=0)


def test_grouped_allgather_one_unit(rank, size):
    dtypes = [torch.int16, torch.float32, torch.bool]
    groups = [[rank_tensor(r, (r + 1 + i, 2), torch.int64, seed=20 + i).to(dt) for r in range(size)]
              for i, dt in enumerate(dtypes)]
    outs = hvd.grouped_allgather([g[rank] for g in groups], name="gag")
    assert len(outs) == len(groups)
    for out, g in zip(outs, groups):
        assert torch.equal(out, torch.cat(g))
    h = hvd.grouped_allgather_async([g[rank] for g in groups])
    for out, g in zip(hvd.synchronize(h), groups):
        assert torch.equal(out, torch.cat(g))
    # Member 1's trailing dimension differs across ranks: the whole group
    # fails on every rank, member 0 included, naming the member.
    with pytest.raises(hvd.HorovodInternalError, match=r"gag\.bad\.1"):
        hvd.grouped_allgather([torch.ones(1, 2), torch.ones(1, 2 + rank)], name="gag.bad")
    assert torch.equal(hvd.allgather(torch.tensor([rank])), torch.arange(size))
    with pytest.raises(ValueError, match="non-empty list"):
        hvd.grouped_allgather([])


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average])
def test_grouped_reducescatter_with_factors(rank, size, op):
    shapes = [(2 * size + 1, 3), (size, 2), (3 * size,)]
    groups = [inputs(size, torch.float64, seed=30 + i, shape=s) for i, s in enumerate(shapes)]
    outs = hvd.grouped_reducescatter([g[rank] for g in groups], op=op, prescale_factor=2.0,
                                     postscale_factor=0.25, name="grs.%d" % op)
    for out, g, s in zip(outs, groups, shapes):
        rows = [s[0] // size + (1 if r < s[0] % size else 0) for r in range(size)]
        begin = sum(rows[:rank])
        # Powers of two and small integers: exact in float64 (an Average
        # divides once more, by size).
        expected = reference(op, g)[begin:begin + rows[rank]] * 0.5
        torch.testing.assert_close(out, expected, rtol=ulp_rtol(torch.float64), atol=0)
    h = hvd.grouped_reducescatter_async([g[rank] for g in groups], op=hvd.Sum)
    assert len(hvd.synchronize(h)) == len(groups)


def test_grouped_reducescatter_gradient(rank, size):
    # Horovod's gradient: the grouped allgather of the incoming gradients,
    # times size for Sum, times the factors.
    xs = [torch.ones(2 * size, 3, requires_grad=True), torch.ones(size, requires_grad=True)]
    outs = hvd.grouped_reducescatter(xs, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0)
    sum(o.sum() for o in outs).backward()
    for x in xs:
        torch.testing.assert_close(x.grad, torch.full(x.shape, size * 1.5), rtol=0, atol=0)


def test_process_set_collectives(rank, size):
    members = [0, size - 1]
    ps = hvd.add_process_set(members)
    try:
        assert ps.size() == 2
        assert ps.included() == (rank in members)
        assert ps.rank() == (members.index(rank) if rank in members else -1)
        if rank in members:
            xs = {r: rank_tensor(r, SHAPE, torch.float32, seed=6) for r in members}
            out = hvd.allreduce(xs[rank], op=hvd.Sum, process_set=ps)
            torch.testing.assert_close(out.double(), reference(hvd.Sum, list(xs.values())),
                                       rtol=0, atol=0)
            assert torch.equal(hvd.allgather(xs[rank], process_set=ps),
                               torch.cat([xs[r] for r in members]))
            assert torch.equal(hvd.broadcast(xs[rank], size - 1, process_set=ps), xs[size - 1])
            hvd.barrier(process_set=ps)
    finally:
        assert hvd.remove_process_set(ps)
    assert ps.process_set_id is None
    assert not hvd.remove_process_set(hvd.global_process_set)


def test_barrier_and_join(rank, size):
    hvd.barrier()
    # Rank 0 joins first; the others still allreduce, rank 0 contributing zeros.
    if rank == 0:
        last = hvd.join()
    else:
        x = torch.full((4,), float(rank))
        out = hvd.allreduce(x, op=hvd.Sum, name="join.ar")
        torch.testing.assert_close(out, torch.full((4,), float(sum(range(1, size)))), rtol=0, atol=0)
        last = hvd.join()
    assert last in range(1, size)
    # Named: the ranks ran different numbers of ops, so auto-names (numbered
    # by this rank's ops, as Horovod's) would not agree.
    assert hvd.allgather(torch.tensor([last]), name="join.last").tolist() == [last] * size


def test_join_fails_other_collectives_on_every_rank(rank, size):
    # Rank 0 joins; every other rank's allgather, broadcast, alltoall and
    # reducescatter fail (HorovodInternalError, naming rank 0 and any other
    # rank that has joined by then) instead of waiting for it, and the
    # ranks then join too.
    if rank == 0:
        last = hvd.join()
    else:
        t = torch.ones(size, 2)
        calls = [
            lambda: hvd.allgather(t, name="join.ag"),
            lambda: hvd.broadcast(t, size - 1, name="join.bc"),
            lambda: hvd.alltoall(t, name="join.a2a"),
            lambda: hvd.reducescatter(t, name="join.rs"),
            lambda: hvd.grouped_allgather([t, t], name="join.gag"),
        ]
        for call in calls:
            # Each fails as soon as this rank asks; a rank that got through
            # its calls first may have joined by then.
            with pytest.raises(hvd.HorovodInternalError, match=r"(rank 0 has|ranks \[0(, \d+)+\] have) joined"):
                call()
        last = hvd.join()
    assert last in range(1, size)
    assert hvd.allgather(torch.tensor([last]), name="join.fail.last").tolist() == [last] * size


def test_join_fails_unnamed_collectives_whose_auto_names_differ(rank, size):
    # Horovod's test_horovod_join_allgather: each rank in turn joins while
    # the others' unnamed allgathers fail. The rank that joined made one
    # unnamed op fewer, so from the second round on (at np >= 3) the others'
    # auto-names differ; each still fails at once instead of waiting for the
    # others' name. Every rank skips one round, so the counts agree after.
    t = torch.ones(3, 2)
    for first in range(size):
        if rank == first:
            hvd.join()
        else:
            with pytest.raises(hvd.HorovodInternalError, match="joined: a joined rank takes part only"):
                hvd.allgather(t)
            hvd.join()
    assert hvd.allgather(torch.tensor([rank])).tolist() == list(range(size))


def test_sparse_allreduce(rank, size):
    dense = [torch.zeros(5, 3) for _ in range(size)]
    for r in range(size):
        dense[r][r % 5] = float(r + 1)
        dense[r][4] = 1.0
    handle = hvd.sparse_allreduce_async(dense[rank].to_sparse(), name="sparse", op=hvd.Sum)
    out = handle()
    assert out.is_sparse
    torch.testing.assert_close(out.to_dense(), torch.stack(dense).sum(0), rtol=0, atol=0)


def test_numpy_reference_of_average_matches_float32(rank, size):
    # An independent check of Average on random (non-integer) float32 data:
    # numpy's float64 mean rounded once; Chorus's float32 sum of `size` values
    # and one scaling each round once, so 2 roundings of relative eps/2 per
    # addition bound the difference by (size + 1) * eps * max|x|.
    gens = [np.random.default_rng(r) for r in range(size)]
    xs = [g.standard_normal(1000).astype(np.float32) for g in gens]
    out = hvd.allreduce(torch.from_numpy(xs[rank])).numpy()
    expected = np.mean(np.stack(xs).astype(np.float64), axis=0)
    bound = (size + 1) * np.finfo(np.float32).eps * np.abs(np.stack(xs)).max(axis=0)
    assert np.all(np.abs(out - expected) <= bound)
