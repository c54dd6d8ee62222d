"""Gradients through each op are the ones Horovod defines, computed here from
every rank's upstream gradient (each rank can rebuild any rank's)."""
import torch

import chorus.torch as hvd
from conftest import rank_tensor


def upstream(r, shape, seed):
    """Rank r's gradient of its loss with respect to the op's output."""
    return rank_tensor(r, shape, torch.float64, seed=seed)


def test_allreduce_gradient_is_the_same_reduction(rank, size):
    for op, combine in ((hvd.Sum, sum), (hvd.Average, lambda gs: sum(gs) / size)):
        x = rank_tensor(rank, (4,), torch.float64).requires_grad_()
        y = hvd.allreduce(x, op=op, name="grad.ar.%d" % op)
        y.backward(upstream(rank, (4,), 1))
        expected = combine([upstream(r, (4,), 1) for r in range(size)])
        torch.testing.assert_close(x.grad, expected, rtol=2 * torch.finfo(torch.float64).eps, atol=0)


def test_grouped_allreduce_gradient(rank, size):
    xs = [rank_tensor(rank, (i + 2,), torch.float64, seed=i).requires_grad_() for i in range(2)]
    ys = hvd.grouped_allreduce(xs, op=hvd.Sum)
    torch.autograd.backward(ys, [upstream(rank, (i + 2,), 7 + i) for i in range(2)])
    for i, x in enumerate(xs):
        expected = sum(upstream(r, (i + 2,), 7 + i) for r in range(size))
        torch.testing.assert_close(x.grad, expected, rtol=0, atol=0)


def test_allgather_gradient_is_this_ranks_rows_of_the_average(rank, size):
    rows = [r + 1 for r in range(size)]
    x = rank_tensor(rank, (rows[rank], 3), torch.float64).requires_grad_()
    y = hvd.allgather(x)
    y.backward(upstream(rank, (sum(rows), 3), 2))
    mean = sum(upstream(r, (sum(rows), 3), 2) for r in range(size)) / size
    begin = sum(rows[:rank])
    torch.testing.assert_close(x.grad, mean[begin:begin + rows[rank]],
                               rtol=2 * torch.finfo(torch.float64).eps, atol=0)


def test_broadcast_gradient_goes_to_the_root(rank, size):
    root = size - 1
    x = rank_tensor(rank, (5,), torch.float64).requires_grad_()
    y = hvd.broadcast(x, root)
    y.backward(upstream(rank, (5,), 3))
    mean = sum(upstream(r, (5,), 3) for r in range(size)) / size
    expected = mean if rank == root else torch.zeros(5, dtype=torch.float64)
    torch.testing.assert_close(x.grad, expected, rtol=2 * torch.finfo(torch.float64).eps, atol=0)


def test_alltoall_gradient_returns_to_the_sender(rank, size):
    splits = [[(r + i) % 2 + 1 for i in range(size)] for r in range(size)]
    x = rank_tensor(rank, (sum(splits[rank]), 2), torch.float64).requires_grad_()
    y, received = hvd.alltoall(x, splits=torch.tensor(splits[rank]))
    rows_in = [splits[r][rank] for r in range(size)]
    assert received.tolist() == rows_in
    y.backward(upstream(rank, (sum(rows_in), 2), 4))
    # Rank r's upstream gradient, split by the rows r received from each rank:
    # the piece from rank `rank` comes back here, in rank order.
    pieces = []
    for r in range(size):
        rows_r = [splits[s][r] for s in range(size)]
        pieces.append(torch.split(upstream(r, (sum(rows_r), 2), 4), rows_r)[rank])
    torch.testing.assert_close(x.grad, torch.cat(pieces), rtol=0, atol=0)


def test_reducescatter_gradient(rank, size):
    rows = 2 * size
    for op in (hvd.Sum, hvd.Average):
        x = rank_tensor(rank, (rows, 2), torch.float64).requires_grad_()
        y = hvd.reducescatter(x, op=op, name="grad.rs.%d" % op)
        y.backward(upstream(rank, (2, 2), 5))
        # Horovod's gradient: the allgather of the upstream gradients, times
        # the set's size for Sum.
        gathered = torch.cat([upstream(r, (2, 2), 5) for r in range(size)])
        expected = gathered * size if op == hvd.Sum else gathered
        torch.testing.assert_close(x.grad, expected, rtol=0, atol=0)
