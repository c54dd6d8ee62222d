"""DistributedOptimizer against one process training on the global batch.

Rank r trains on its shard of a global batch; the reference model trains on
the whole batch with the loss averaged over it. With equal shards, the
average over ranks of each rank's mean-loss gradient is the global mean-loss
gradient, so both take the same steps up to the order of float64 additions:
the bound 1e-12 is ~4000 float64 epsilons on parameters and gradients of
order 1, far above that rounding and far below any real difference."""
import copy

import pytest
import torch

import chorus.torch as hvd

TOL = dict(rtol=0, atol=1e-12)


def make_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(),
                               torch.nn.Linear(8, 3)).double()


def global_batch(step, size, rows_per_rank=4):
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randn(size * rows_per_rank, 6, generator=g, dtype=torch.float64)
    y = torch.randn(size * rows_per_rank, 3, generator=g, dtype=torch.float64)
    return x, y


def shard(t, rank, size):
    return t.chunk(size)[rank]


def loss_of(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)


@pytest.mark.parametrize("make_opt", [
    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: torch.optim.Adam(p, lr=0.01),
], ids=["sgd", "adam"])
def test_matches_single_process_on_global_batch(rank, size, make_opt):
    model, reference = make_model(), make_model()
    opt = hvd.DistributedOptimizer(make_opt(model.parameters()),
                                   named_parameters=model.named_parameters())
    ref_opt = make_opt(reference.parameters())
    for step in range(3):
        x, y = global_batch(step, size)
        opt.zero_grad()
        loss_of(model, shard(x, rank, size), shard(y, rank, size)).backward()
        opt.step()
        ref_opt.zero_grad()
        loss_of(reference, x, y).backward()
        ref_opt.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, **TOL)


def test_backward_passes_per_step_accumulates(rank, size):
    model, reference = make_model(), make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters(),
                                   backward_passes_per_step=2)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        ref_opt.zero_grad()
        for micro in range(2):
            x, y = global_batch(10 * step + micro, size)
            loss_of(model, shard(x, rank, size), shard(y, rank, size)).backward()
            # Horovod averages over ranks and sums over the passes.
            loss_of(reference, x, y).backward()
        opt.step()
        ref_opt.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, **TOL)


def test_clipping_between_synchronize_and_step(rank, size):
    model, reference = make_model(), make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5),
                                   named_parameters=model.named_parameters())
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.5)
    x, y = global_batch(20, size)
    loss_of(model, shard(x, rank, size), shard(y, rank, size)).backward()
    opt.synchronize()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
    with opt.skip_synchronize():
        opt.step()
    loss_of(reference, x, y).backward()
    torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.05)
    ref_opt.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, **TOL)


def test_fp16_compression_and_predivide(rank, size):
    model, reference = make_model(), make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                   named_parameters=model.named_parameters(),
                                   compression=hvd.Compression.fp16,
                                   gradient_predivide_factor=2.0)
    x, y = global_batch(30, size)
    loss_of(model, shard(x, rank, size), shard(y, rank, size)).backward()
    opt.synchronize()
    # Reference: each rank's gradient rounded to float16, summed and averaged.
    per_rank = []
    for r in range(size):
        m = copy.deepcopy(reference)
        loss_of(m, shard(x, r, size), shard(y, r, size)).backward()
        per_rank.append([p.grad.clone() for p in m.parameters()])
    for i, p in enumerate(model.parameters()):
        grads = [g[i] for g in per_rank]
        expected = sum(g.half().double() for g in grads) / size
        # float16 keeps 11 bits: the reduction of `size` float16 values
        # (with a predivide by 2 and a postscale by 2, both exact) rounds at
        # most once per addition and once for the average, each within half
        # a unit in the last place of the largest partial result.
        scale = sum(g.abs() for g in grads)
        bound = (size + 1) * 2.0 ** -11 * scale + 2.0 ** -24
        assert p.grad.dtype == torch.float64
        assert torch.all((p.grad - expected).abs() <= bound)


def test_unused_parameter_is_reduced_too(rank, size):
    model = make_model()
    extra = torch.nn.Parameter(torch.full((2,), float(rank), dtype=torch.float64))
    params = list(model.named_parameters()) + [("extra", extra)]
    opt = hvd.DistributedOptimizer(torch.optim.SGD([p for _, p in params], lr=1.0),
                                   named_parameters=params)
    x, y = global_batch(40, size)
    loss_of(model, shard(x, rank, size), shard(y, rank, size)).backward()
    extra.grad = torch.full((2,), float(rank), dtype=torch.float64)
    opt.step()
    mean_rank = sum(range(size)) / size
    torch.testing.assert_close(extra, torch.full((2,), rank - mean_rank, dtype=torch.float64), **TOL)


def test_bad_arguments(rank, size):
    model = make_model()
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="backward_passes_per_step"):
        hvd.DistributedOptimizer(sgd, named_parameters=model.named_parameters(),
                                 backward_passes_per_step=0)
    with pytest.raises(ValueError, match="more than once"):
        p = list(model.parameters())
        hvd.DistributedOptimizer(sgd, named_parameters=[("a", p[0]), ("a", p[1]), ("b", p[2]),
                                                        ("c", p[3])])
    with pytest.raises(ValueError, match="not in named_parameters"):
        hvd.DistributedOptimizer(sgd, named_parameters=list(model.named_parameters())[:1])
    with pytest.raises(ValueError, match="gradient_predivide_factor"):
        hvd.DistributedOptimizer(sgd, named_parameters=model.named_parameters(), op=hvd.Sum,
                                 gradient_predivide_factor=2.0)
    with pytest.raises(TypeError):
        hvd.DistributedOptimizer(object())


def test_sparse_embedding_gradients(rank, size):
    # Rank r looks up rows r and 5: row 5 by every rank, row r by rank r.
    for sparse_as_dense in (False, True):
        torch.manual_seed(0)
        emb = torch.nn.Embedding(6, 2, sparse=True).double()
        before = emb.weight.detach().clone()
        opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=1.0),
                                       named_parameters=emb.named_parameters(),
                                       sparse_as_dense=sparse_as_dense)
        emb(torch.tensor([rank % 6, 5])).sum().backward()
        opt.step()
        assert emb.weight.grad.is_sparse
        # The averaged gradient: 1 per lookup, summed over ranks, over size.
        expected = torch.zeros(6, 2, dtype=torch.float64)
        for r in range(size):
            expected[r % 6] += 1.0
            expected[5] += 1.0
        expected /= size
        torch.testing.assert_close(emb.weight.detach(), before - expected, **TOL)


def test_step_after_synchronize_warns_and_reduces_again(rank, size):
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.0),
                                   named_parameters=model.named_parameters())
    x, y = global_batch(50, size)
    loss_of(model, shard(x, rank, size), shard(y, rank, size)).backward()
    opt.synchronize()
    with pytest.warns(UserWarning, match=r"optimizer\.step\(\) called without optimizer\.skip_synchronize\(\)"):
        opt.step()
