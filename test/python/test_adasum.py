"""op=Adasum (allreduce, DistributedOptimizer) against the adaptive sum of
Maleki et al. (MLSys 2021), computed here in float64: two ranks' vectors a
and b combine into (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b, and a
power-of-two number of ranks combines neighbours first (ranks 0+1, 2+3,
...), then those results, as Horovod's recursive halving does. Inputs are
chosen so that every step is exact in float32 and float64: orthogonal
vectors add, identical ones stay."""
import numpy as np
import pytest
import torch

import chorus.torch as hvd


def adasum_pair(a, b):
    dot = float(np.dot(a, b))
    return (1 - dot / (2 * float(np.dot(a, a)))) * a + (1 - dot / (2 * float(np.dot(b, b)))) * b


def adasum_reference(xs):
    level = [np.asarray(x, dtype=np.float64) for x in xs]
    while len(level) > 1:
        level = [adasum_pair(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def is_power_of_two(n):
    return n & (n - 1) == 0


# Per rank r: orthogonal (disjoint supports), identical, and a pair whose
# coefficients are dyadic (a.b = 2, |a|^2 = 4, |b|^2 = 2: 0.75 a + 0.5 b).
def orthogonal(r, size):
    x = np.zeros(2 * size)
    x[2 * r], x[2 * r + 1] = r + 1, -(r + 2)
    return x


def identical(r, size):
    return np.array([3.0, -1.0, 0.5, 2.0])


def dyadic(r, size):
    return np.array([2.0, 0.0]) if r % 2 == 0 else np.array([1.0, 1.0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", [orthogonal, identical, dyadic])
def test_adasum_matches_the_papers_formula(rank, size, dtype, case):
    if not is_power_of_two(size):
        pytest.skip("Adasum needs a power-of-two number of ranks (test_adasum_refuses_other_sizes)")
    xs = [case(r, size) for r in range(size)]
    if case is dyadic and size > 2:
        pytest.skip("dyadic coefficients hold for one pair only")
    out = hvd.allreduce(torch.tensor(xs[rank], dtype=dtype), op=hvd.Adasum,
                        name="adasum.%s.%s" % (case.__name__, dtype))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.double().numpy(), adasum_reference(xs))
    if case is orthogonal:
        np.testing.assert_array_equal(out.double().numpy(), np.sum(xs, axis=0))
    if case is identical:
        np.testing.assert_array_equal(out.double().numpy(), xs[0])


def test_grouped_adasum_uses_each_tensors_own_dot_products(rank, size):
    if not is_power_of_two(size):
        pytest.skip("Adasum needs a power-of-two number of ranks")
    # Fused together, one tensor's dot products must not leak into the
    # other's: orthogonal pairs add, identical ones stay.
    members = [orthogonal, identical]
    outs = hvd.grouped_allreduce([torch.tensor(m(rank, size)) for m in members], op=hvd.Adasum,
                                 name="adasum.grouped")
    for out, m in zip(outs, members):
        np.testing.assert_array_equal(out.numpy(), adasum_reference([m(r, size) for r in range(size)]))
    t = torch.tensor(orthogonal(rank, size))
    hvd.allreduce_(t, op=hvd.Adasum, name="adasum.in_place")
    np.testing.assert_array_equal(t.numpy(), np.sum([orthogonal(r, size) for r in range(size)], axis=0))


def test_adasum_refuses_what_it_does_not_reduce(rank, size):
    # The runtime's checks: a ValueError that is also HorovodInternalError.
    with pytest.raises(hvd.HorovodInternalError, match="adasum needs a floating-point tensor"):
        hvd.allreduce(torch.ones(4, dtype=torch.int32), op=hvd.Adasum, name="adasum.int")
    with pytest.raises(RuntimeError, match="reducescatter does not support reduce op adasum"):
        hvd.reducescatter(torch.ones(2 * size), op=hvd.Adasum)
    with pytest.raises(hvd.HorovodInternalError, match="reducescatter does not support reduce op adasum"):
        hvd.grouped_reducescatter([torch.ones(2 * size)], op=hvd.Adasum)
    w = torch.nn.Parameter(torch.ones(2))
    with pytest.raises(ValueError, match="does not take groups"):
        hvd.DistributedOptimizer(torch.optim.SGD([w], lr=1.0), op=hvd.Adasum, groups=1)
    opt = hvd.DistributedOptimizer(torch.optim.SGD([w], lr=1.0), op=hvd.Adasum)
    with pytest.raises(AssertionError, match="skip_synchronize"):
        with opt.skip_synchronize():
            pass


@pytest.mark.parametrize("passes", [1, 2])
@pytest.mark.parametrize("case", [orthogonal, identical, dyadic])
def test_distributed_optimizer_adasum_combines_the_updates(rank, size, case, passes):
    # SGD's update of w is -lr * (accumulated gradient) = -lr * passes * c_r
    # on rank r; the ranks' updates combine by Adasum, starting from w0. The
    # unused parameter v gets no gradient: its update is zero on every rank.
    if not is_power_of_two(size) or (case is dyadic and size > 2):
        pytest.skip("the reference needs a power-of-two number of ranks (dyadic: 2)")
    c = case(rank, size)
    w0 = np.arange(len(c), dtype=np.float64) - 1.0
    w = torch.nn.Parameter(torch.tensor(w0))
    v = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([w, v], lr=0.5), named_parameters=[("w", w), ("v", v)],
                                   op=hvd.Adasum, backward_passes_per_step=passes)
    for _ in range(passes):
        (w * torch.tensor(c)).sum().backward()
    opt.step()
    updates = [-0.5 * passes * case(r, size) for r in range(size)]
    np.testing.assert_array_equal(w.detach().numpy(), w0 + adasum_reference(updates))
    np.testing.assert_array_equal(v.detach().numpy(), np.ones(3))
    # A second step starts from the combined value.
    opt.zero_grad()
    (w * torch.tensor(c)).sum().backward()
    if passes == 1:
        opt.step()
        second = [-0.5 * case(r, size) for r in range(size)]
        expected = w0 + adasum_reference(updates) + adasum_reference(second)
        np.testing.assert_array_equal(w.detach().numpy(), expected)


def test_adasum_refuses_other_sizes(rank, size):
    if is_power_of_two(size):
        pytest.skip("needs a number of ranks that is not a power of two")
    with pytest.raises(ValueError, match="power of two .* has %d ranks" % size):
        hvd.allreduce(torch.ones(4), op=hvd.Adasum, name="adasum.size")
    w = torch.nn.Parameter(torch.ones(4))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([w], lr=1.0), op=hvd.Adasum)
    with pytest.raises(ValueError, match="power of two"):
        w.sum().backward()
    # ... and the runtime goes on working.
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), float(size)))
