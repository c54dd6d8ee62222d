"""Parameter, optimizer-state and object broadcast, allgather_object, and
lifecycle, build flags and error mapping."""
import pytest
import torch

import chorus.torch as hvd
from test_optimizer import make_model, global_batch, loss_of

OPTIMIZERS = {
    "sgd": lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9, nesterov=True),
    "adam": lambda p, lr: torch.optim.Adam(p, lr=lr, amsgrad=True),
    "adamw": lambda p, lr: torch.optim.AdamW(p, lr=lr),
    "adamax": lambda p, lr: torch.optim.Adamax(p, lr=lr),
    "adagrad": lambda p, lr: torch.optim.Adagrad(p, lr=lr),
    "adadelta": lambda p, lr: torch.optim.Adadelta(p, lr=lr),
    "rmsprop": lambda p, lr: torch.optim.RMSprop(p, lr=lr, momentum=0.5),
    "asgd": lambda p, lr: torch.optim.ASGD(p, lr=lr),
    "nadam": lambda p, lr: torch.optim.NAdam(p, lr=lr),
    "radam": lambda p, lr: torch.optim.RAdam(p, lr=lr),
    "rprop": lambda p, lr: torch.optim.Rprop(p, lr=lr),
}


def root_state(name, root):
    """The optimizer the root has: two steps at lr 0.01 * (root + 1)."""
    model = make_model(seed=root)
    opt = OPTIMIZERS[name](model.parameters(), 0.01 * (root + 1))
    for step in range(2):
        opt.zero_grad()
        x, y = global_batch(step, 1)
        loss_of(model, x, y).backward()
        opt.step()
    return model, opt


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_broadcast_optimizer_state_and_parameters(rank, size, name):
    root = size - 1
    if rank == root:
        model, opt = root_state(name, root)
    else:
        # No step taken: no state yet, and other options.
        model = make_model(seed=rank + 10)
        opt = OPTIMIZERS[name](model.parameters(), 0.5)
    # State first: as in Horovod, a rank without state takes one step on zero
    # gradients to create it, which may move its parameters (ASGD's decay).
    had_state = bool(opt.state_dict()["state"])  # Adagrad makes its state at once
    hvd.broadcast_optimizer_state(opt, root_rank=root)
    hvd.broadcast_parameters(model.state_dict(), root_rank=root)
    if not had_state:
        assert all(torch.equal(p.grad, torch.zeros_like(p)) for p in model.parameters())
    ref_model, ref_opt = root_state(name, root)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        assert torch.equal(p, q)
    got, want = opt.state_dict(), ref_opt.state_dict()
    assert got["param_groups"] == want["param_groups"]
    assert sorted(got["state"]) == sorted(want["state"])
    for key in want["state"]:
        for field, value in want["state"][key].items():
            mine = got["state"][key][field]
            if isinstance(value, torch.Tensor):
                assert torch.equal(mine, value), (key, field)
            else:
                assert mine == value, (key, field)


def test_broadcast_parameters_named_list(rank, size):
    model = make_model(seed=rank)
    hvd.broadcast_parameters(list(model.named_parameters()), root_rank=0)
    for p, q in zip(model.parameters(), make_model(seed=0).parameters()):
        assert torch.equal(p, q)
    with pytest.raises(ValueError):
        hvd.broadcast_parameters(42, root_rank=0)


def test_broadcast_and_allgather_object(rank, size):
    obj = {"rank": rank, "text": "x" * (rank * 100), "t": torch.arange(rank + 1)}
    got = hvd.broadcast_object(obj, root_rank=size - 1)
    assert got["rank"] == size - 1 and got["text"] == "x" * ((size - 1) * 100)
    assert torch.equal(got["t"], torch.arange(size))
    everyone = hvd.allgather_object(("r", rank, [rank] * rank))
    assert everyone == [("r", r, [r] * r) for r in range(size)]


def test_topology_and_flags(rank, size):
    import os
    assert hvd.is_initialized()
    assert rank == int(os.environ["OMPI_COMM_WORLD_RANK"])
    assert size == int(os.environ["OMPI_COMM_WORLD_SIZE"])
    assert hvd.local_size() * hvd.cross_size() == size and hvd.is_homogeneous()
    assert 0 <= hvd.local_rank() < hvd.local_size() and 0 <= hvd.cross_rank() < hvd.cross_size()
    assert hvd.mpi_built() and hvd.mpi_enabled() and hvd.mpi_threads_supported()
    assert not hvd.gloo_built() and not hvd.ccl_built()
    # Horovod's nccl_built() is NCCL's version code (2.x.y: >= 2000), or 0.
    nccl = hvd.nccl_built()
    assert type(nccl) is int and (nccl == 0 or (nccl >= 2000 and hvd.cuda_built()))
    hvd.init()  # idempotent: still the same job
    assert hvd.rank() == rank


def test_errors(rank, size):
    with pytest.raises(TypeError):
        hvd.allreduce([1.0, 2.0])
    with pytest.raises(ValueError, match="op"):
        hvd.allreduce(torch.ones(2), op=42)
    with pytest.raises(TypeError):
        hvd.allreduce(torch.ones(2), process_set=[0])
    with pytest.raises(ValueError, match="splits must be integers"):
        hvd.alltoall(torch.ones(size), splits=torch.ones(size))
    # A dtype Chorus has no reduction for: refused on this rank, a ValueError
    # that is also Chorus's error class.
    with pytest.raises(ValueError) as info:
        hvd.allreduce(torch.ones(2, dtype=torch.complex64), name="complex")
    assert isinstance(info.value, hvd.HorovodInternalError)
    assert "complex" in str(info.value).lower()
    # Ranks that disagree: every rank gets the runtime's message naming both.
    with pytest.raises(hvd.HorovodInternalError, match=r"rank 0 has \[1\]") as info:
        hvd.allreduce(torch.ones(rank + 1), name="mismatch")
    assert isinstance(info.value, RuntimeError)
    # ... and the runtime goes on working.
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), float(size)))
