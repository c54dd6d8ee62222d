"""Broadcast of parameters, optimizer state and Python objects, and the
allgather of objects (horovod.torch.functions)."""
import io
import pickle

import torch

from .basics import global_process_set
from .mpi_ops import broadcast_, broadcast_async_, allgather, synchronize, _name
from chorus import _chorus


def broadcast_parameters(params, root_rank, process_set=global_process_set):
    """Overwrites every tensor of `params` (a state_dict, named_parameters(),
    or a list of (name, tensor)) with root_rank's, in place."""
    if isinstance(params, dict):
        params = sorted(params.items())
    elif isinstance(params, list):
        params = [(name, p) for name, p in params]  # also checks the pairs
    else:
        raise ValueError("broadcast_parameters takes a dict (state_dict) or a list of (name, tensor) "
                         "pairs, got %s" % type(params).__name__)
    handles = []
    for name, p in params:
        if p is None:
            continue
        if not isinstance(p, torch.Tensor):
            raise TypeError("parameter %r is a %s, not a tensor" % (name, type(p).__name__))
        tensor = p.data if isinstance(p, torch.nn.Parameter) else p
        handles.append(broadcast_async_(tensor, root_rank, "broadcast_parameters." + str(name),
                                        process_set))
    for h in handles:
        synchronize(h)


def broadcast_optimizer_state(optimizer, root_rank, model=None, process_set=global_process_set):
    """Makes every rank's optimizer state and options (param_groups) root_rank's.

    As in Horovod, a rank whose optimizer has no state yet first creates it
    with one step on zero gradients (sparse ones for SparseAdam and for
    `model`'s sparse embeddings under SGD), so that parameters have .grad
    afterwards. The state dict is then sent whole, as one object."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("broadcast_optimizer_state does not support torch.optim.LBFGS (its state "
                         "holds closures' history, not per-parameter tensors)")
    if not optimizer.state_dict()["state"]:
        sparse = set()
        if model is not None:
            for m in model.modules():
                if isinstance(m, torch.nn.Embedding) and m.sparse:
                    sparse.update(id(p) for p in m.parameters())
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    p.grad = torch.zeros_like(p)
                    if isinstance(optimizer, torch.optim.SparseAdam) or \
                            (isinstance(optimizer, torch.optim.SGD) and id(p) in sparse):
                        p.grad = p.grad.to_sparse()
        # A DistributedOptimizer's class names the optimizer it wraps
        # (optimizer.py): that one's own step, with no gradient exchange.
        wrapped = getattr(type(optimizer), "_chorus_wrapped", None)
        if wrapped is not None:
            wrapped.step(optimizer)
        else:
            optimizer.step()
    state_dict = broadcast_object(optimizer.state_dict(), root_rank, name="broadcast_optimizer_state",
                                  process_set=process_set)
    optimizer.load_state_dict(state_dict)


def _to_bytes(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer, pickle_protocol=pickle.HIGHEST_PROTOCOL)
    return torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)


def _from_bytes(t):
    return torch.load(io.BytesIO(t.numpy().tobytes()))


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Returns root_rank's `obj` on every rank (pickled; tensors included).
    Unnamed, the op is named after obj's type, as in Horovod: the name must
    agree across ranks, which a counter of this rank's ops would not after
    ranks ran different ops (join)."""
    name = _name(name if name is not None else type(obj).__name__, "broadcast_object")
    if _chorus.rank() == root_rank:
        payload = _to_bytes(obj)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
    else:
        payload = None
        length = torch.zeros(1, dtype=torch.int64)
    broadcast_(length, root_rank, name + ".size", process_set)
    if payload is None:
        payload = torch.empty(int(length[0]), dtype=torch.uint8)
    broadcast_(payload, root_rank, name + ".data", process_set)
    return obj if _chorus.rank() == root_rank else _from_bytes(payload)


def allgather_object(obj, name=None, process_set=global_process_set):
    """Returns the list of every rank's `obj`, in rank order of the set
    (unnamed: named after obj's type, as broadcast_object)."""
    name = _name(name if name is not None else type(obj).__name__, "allgather_object")
    payload = _to_bytes(obj)
    sizes = allgather(torch.tensor([payload.numel()], dtype=torch.int64), name + ".sizes",
                      process_set)
    data = allgather(payload, name + ".data", process_set)
    out, offset = [], 0
    for n in sizes.tolist():
        out.append(_from_bytes(data[offset:offset + n]))
        offset += n
    return out
