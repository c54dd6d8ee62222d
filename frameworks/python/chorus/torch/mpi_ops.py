"""Collectives on torch tensors with horovod.torch's names and semantics:
integer handles for poll()/synchronize(), auto-generated names, the
deprecated `average=` argument, and autograd functions whose gradients are
the ones Horovod defines."""
import itertools
import warnings

import torch

from chorus import _chorus
from chorus import ChorusError, ChorusValueError
from .basics import _on_shutdown, global_process_set, ProcessSet
from .basics import rank, size  # noqa: F401  (re-exported like Horovod's)
from .compression import Compression

# Horovod's values for its reduce ops.
Average = 0
Sum = 1
Adasum = 2
Min = 3
Max = 4
Product = 5

_CHORUS_OPS = {Average: _chorus.OP_AVERAGE, Sum: _chorus.OP_SUM, Adasum: _chorus.OP_ADASUM,
               Min: _chorus.OP_MIN, Max: _chorus.OP_MAX, Product: _chorus.OP_PRODUCT}

HorovodInternalError = ChorusError

# handle (int) -> what synchronize() waits on and returns: a _Pending, or for
# an in-place op the binding's handle itself, whose wait() returns the
# caller's tensor. Entries keep the op's tensors alive until synchronized,
# even if the caller dropped the handle (the C++ handle holds them too).
_handle_map = {}
_handle_ids = itertools.count(1)
# Numbers of unnamed ops, one count per process set: a named op that some
# ranks skip (as around a join), or an op on a set that this rank is not in,
# leaves the auto-names of later unnamed ops agreeing across ranks.
_noname_ids = {}


def _forget_ops():
    _handle_map.clear()
    _noname_ids.clear()


_on_shutdown.append(_forget_ops)


class _Pending:
    def __init__(self, waits, finish):
        self.waits = waits    # C++ handles
        self.finish = finish  # outputs of every C++ handle -> the result

    def poll(self):
        return all(h.poll() for h in self.waits)

    def wait(self):
        return self.finish([h.wait() for h in self.waits])


def _register(pending):
    handle = next(_handle_ids)
    _handle_map[handle] = pending
    return handle


def _name(name, kind, process_set=global_process_set):
    # The op's kind prefixes its name, as in Horovod ("allreduce.<name>"): an
    # allreduce and an allgather may share a name while both are in flight,
    # and the timeline's lanes carry Horovod's names.
    # Unnamed ops are numbered in the order this rank makes them on the set
    # (Horovod numbers them by handle); members that make the same unnamed
    # ops in the same order agree on the names.
    if name is None:
        set_id = _set_id(process_set)
        count = _noname_ids.setdefault(set_id, itertools.count(1))
        return "%s.noname.%s.%d" % (kind, set_id, next(count))
    if not isinstance(name, str):
        raise TypeError("name must be a str, got %s" % type(name).__name__)
    return kind + "." + name


def _set_id(process_set):
    if not isinstance(process_set, ProcessSet):
        raise TypeError("process_set must be a ProcessSet, got %s" % type(process_set).__name__)
    return process_set._require_id()


def _check_tensor(tensor, what="tensor"):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (what, type(tensor).__name__))


def _factor(value, what):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError("%s must be a number, got %s" % (what, type(value).__name__)) from None


def handle_average_backwards_compatibility(op, average):
    if op is not None:
        if average is not None:
            raise ValueError("give op or the deprecated average, not both")
        return op
    if average is not None:
        warnings.warn("average= is deprecated: use op=Average or op=Sum",
                      DeprecationWarning)
        return Average if average else Sum
    return Average


def _chorus_op(op):
    if op not in _CHORUS_OPS:
        raise ValueError("op %r is not one of Average, Sum, Adasum, Min, Max, Product" % (op,))
    return _CHORUS_OPS[op]


def _first(outputs):
    return outputs[0][0]


# -- allreduce ---------------------------------------------------------------

def _common_allreduce(tensor, average, name, op, prescale_factor, postscale_factor, process_set):
    """(name, the binding's op) for the common in-place call (a tensor, an op
    or none, a str name or none, float factors, the global set), checked
    here in one go; None for any other call, which the general path checks
    and words the errors of. At 4 KiB each Python call of the general path's
    checks cost ~0.5 us a rank at np=2 (docs/MEASUREMENTS.md, "A 4 KiB
    allreduce from Python")."""
    if (average is None and process_set is global_process_set and (op is None or type(op) is int)
            and type(prescale_factor) is float and type(postscale_factor) is float
            and isinstance(tensor, torch.Tensor) and (name is None or type(name) is str)):
        chorus_op = _CHORUS_OPS.get(Average if op is None else op)
        if chorus_op is not None:
            return (_name(None, "allreduce") if name is None else "allreduce." + name), chorus_op
    return None


def _allreduce_args(tensor, name, op, prescale_factor, postscale_factor, process_set):
    """The binding's arguments after the tensor, for any allreduce call:
    each checked, with Horovod's errors."""
    _check_tensor(tensor)
    # The runtime scales integers as Horovod does (in double, truncated).
    return (_name(name, "allreduce", process_set), _chorus_op(op),
            _factor(prescale_factor, "prescale_factor"), _factor(postscale_factor, "postscale_factor"),
            _set_id(process_set))


def _allreduce_async(tensor, name, op, prescale_factor, postscale_factor, process_set, in_place):
    args = _allreduce_args(tensor, name, op, prescale_factor, postscale_factor, process_set)
    handle = _chorus.allreduce_async(tensor if in_place else tensor.detach(), *args, in_place)
    # An in-place op's C++ handle holds the tensor and its wait() returns it.
    return _register(handle if in_place else _Pending([handle], _first))


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts a reduction of `tensor` over the process set into a new tensor;
    returns a handle for poll()/synchronize()."""
    op = handle_average_backwards_compatibility(op, average)
    return _allreduce_async(tensor, name, op, prescale_factor, postscale_factor, process_set, False)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """As allreduce_async, writing the result into `tensor`."""
    common = _common_allreduce(tensor, average, name, op, prescale_factor, postscale_factor, process_set)
    if common is not None:
        return _register(_chorus.allreduce_async(tensor, *common, prescale_factor, postscale_factor, 0, True))
    op = handle_average_backwards_compatibility(op, average)
    return _allreduce_async(tensor, name, op, prescale_factor, postscale_factor, process_set, True)


class HorovodAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, average, name, op, prescale_factor, postscale_factor, process_set):
        ctx.op = op
        ctx.factors = (prescale_factor, postscale_factor)
        ctx.process_set = process_set
        return synchronize(allreduce_async(tensor, average, name, op, prescale_factor,
                                           postscale_factor, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        # Horovod's gradient: the same reduction of the incoming gradients.
        grad = allreduce(grad_output, op=ctx.op, prescale_factor=ctx.factors[0],
                         postscale_factor=ctx.factors[1], process_set=ctx.process_set)
        return grad, None, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Reduces `tensor` over the process set (Average by default) and returns
    the result in a new tensor; differentiable."""
    _check_tensor(tensor)
    op = handle_average_backwards_compatibility(op, average)
    compressed, ctx = compression.compress(tensor)
    summed = HorovodAllreduce.apply(compressed, None, name, op, prescale_factor, postscale_factor,
                                    process_set)
    return compression.decompress(summed, ctx)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """Reduces `tensor` in place and returns it."""
    common = _common_allreduce(tensor, average, name, op, prescale_factor, postscale_factor, process_set)
    if common is not None:
        _chorus.allreduce_(tensor, *common, prescale_factor, postscale_factor, 0)
        return tensor
    op = handle_average_backwards_compatibility(op, average)
    args = _allreduce_args(tensor, name, op, prescale_factor, postscale_factor, process_set)
    _chorus.allreduce_(tensor, *args)
    return tensor


def _grouped_allreduce_async(tensors, name, op, prescale_factor, postscale_factor, process_set,
                             in_place):
    _check_group(tensors)
    inputs = list(tensors) if in_place else [t.detach() for t in tensors]
    handle = _chorus.grouped_allreduce_async(inputs, _name(name, "grouped_allreduce", process_set),
                                             _chorus_op(op), _factor(prescale_factor, "prescale_factor"),
                                             _factor(postscale_factor, "postscale_factor"),
                                             _set_id(process_set), in_place)
    return _register(_Pending([handle], lambda outs: list(outs[0])))


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    op = handle_average_backwards_compatibility(op, average)
    return _grouped_allreduce_async(tensors, name, op, prescale_factor, postscale_factor,
                                    process_set, False)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    op = handle_average_backwards_compatibility(op, average)
    return _grouped_allreduce_async(tensors, name, op, prescale_factor, postscale_factor,
                                    process_set, True)


class HorovodGroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, average, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.op = op
        ctx.factors = (prescale_factor, postscale_factor)
        ctx.process_set = process_set
        return tuple(synchronize(grouped_allreduce_async(list(tensors), average, name, op,
                                                         prescale_factor, postscale_factor,
                                                         process_set)))

    @staticmethod
    def backward(ctx, *grad_output):
        grads = grouped_allreduce(list(grad_output), op=ctx.op, prescale_factor=ctx.factors[0],
                                  postscale_factor=ctx.factors[1], process_set=ctx.process_set)
        return (None, None, None, None, None, None, *grads)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Reduces a list of tensors as one unit; returns a list of new tensors."""
    _check_group(tensors)
    op = handle_average_backwards_compatibility(op, average)
    compressed = [compression.compress(t) for t in tensors]
    outs = HorovodGroupedAllreduce.apply(None, name, op, prescale_factor, postscale_factor,
                                         process_set, *[c for c, _ in compressed])
    return [compression.decompress(t, ctx) for t, (_, ctx) in zip(outs, compressed)]


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor, process_set))


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Allreduce of a sparse tensor through allgathers of its indices and
    values. As in Horovod, returns a function that waits and returns the
    (uncoalesced) sparse result."""
    t = tensor.coalesce() if not tensor.is_coalesced() else tensor
    indices_handle = allgather_async(t._indices().t().contiguous(), name=name + ".indices",
                                     process_set=process_set)
    values_handle = allgather_async(t._values(), name=name + ".values", process_set=process_set)

    def finish():
        indices = synchronize(indices_handle)
        values = synchronize(values_handle)
        if op == Average:
            values = values / process_set.size()
        elif op != Sum:
            raise NotImplementedError("sparse allreduce supports Average and Sum only")
        return torch.sparse_coo_tensor(indices.t(), values, size=t.size())
    return finish


# -- allgather ---------------------------------------------------------------

def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts a concatenation of every rank's tensor along dimension 0."""
    _check_tensor(tensor)
    handle = _chorus.allgather_async(tensor.detach(), _name(name, "allgather", process_set),
                                     _set_id(process_set))
    return _register(_Pending([handle], _first))


class HorovodAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set):
        # Submitted first: the runtime refuses a scalar with its own message.
        output = synchronize(allgather_async(tensor, name, process_set))
        ctx.dim = tensor.shape[0]
        ctx.process_set = process_set
        return output

    @staticmethod
    def backward(ctx, grad_output):
        # Horovod's gradient: the averaged incoming gradient, this rank's rows.
        grad = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        dims = allgather(torch.tensor([ctx.dim], dtype=torch.int64), process_set=ctx.process_set)
        offset = int(dims[:ctx.process_set.rank()].sum())
        return grad.narrow(0, offset, ctx.dim), None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Concatenates every rank's tensor along dimension 0 (sizes may differ)."""
    _check_tensor(tensor)
    return HorovodAllgather.apply(tensor, name, process_set)


def _check_group(tensors):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError("grouped ops take a list of tensors, got %s" % type(tensors).__name__)
    if not tensors:
        raise ValueError("grouped ops take a non-empty list of tensors")
    for t in tensors:
        _check_tensor(t, "every tensor of the group")


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """Starts an allgather of each tensor, negotiated as one unit (a mismatch
    in any member fails the whole group on every rank)."""
    _check_group(tensors)
    handle = _chorus.grouped_allgather_async([t.detach() for t in tensors],
                                             _name(name, "grouped_allgather", process_set),
                                             _set_id(process_set))
    return _register(_Pending([handle], lambda outs: list(outs[0])))


class HorovodGroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        outputs = tuple(synchronize(grouped_allgather_async(list(tensors), name, process_set)))
        ctx.dims = [t.shape[0] for t in tensors]
        ctx.process_set = process_set
        return outputs

    @staticmethod
    def backward(ctx, *grad_output):
        grads = grouped_allreduce(list(grad_output), op=Average, process_set=ctx.process_set)
        dims = allgather(torch.tensor([ctx.dims], dtype=torch.int64), process_set=ctx.process_set)
        offsets = dims[:ctx.process_set.rank()].sum(dim=0)
        return (None, None, *[g.narrow(0, int(o), d) for g, o, d in zip(grads, offsets, ctx.dims)])


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    _check_group(tensors)
    return list(HorovodGroupedAllgather.apply(name, process_set, *tensors))


# -- broadcast ---------------------------------------------------------------

def _broadcast_async(tensor, root_rank, name, process_set, in_place):
    _check_tensor(tensor)
    if not isinstance(root_rank, int):
        raise TypeError("root_rank must be an int, got %s" % type(root_rank).__name__)
    source = tensor if in_place else tensor.detach()
    handle = _chorus.broadcast_async(source, root_rank, _name(name, "broadcast", process_set),
                                     _set_id(process_set), in_place)
    # An in-place op's C++ handle holds the tensor and its wait() returns it.
    return _register(handle if in_place else _Pending([handle], _first))


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts a broadcast of root_rank's tensor (a rank of the job) into a new tensor."""
    return _broadcast_async(tensor, root_rank, name, process_set, False)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    return _broadcast_async(tensor, root_rank, name, process_set, True)


class HorovodBroadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        # Horovod's gradient: the averaged gradient on the root, zero elsewhere.
        grad = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        if _chorus.rank() != ctx.root_rank:
            grad = grad * 0
        return grad, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """Returns root_rank's tensor on every rank (a new tensor); differentiable."""
    _check_tensor(tensor)
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


# -- alltoall ----------------------------------------------------------------

def _splits_list(splits):
    if splits is None:
        return []
    if isinstance(splits, torch.Tensor):
        if splits.dtype.is_floating_point or splits.dtype == torch.bool:
            # A ValueError, as Horovod raises for a splits tensor of another type.
            raise ValueError("alltoall splits must be integers, got a %s tensor" % splits.dtype)
        if splits.dim() > 1:
            raise ValueError("alltoall splits must be one-dimensional, got shape %s"
                             % list(splits.shape))
        return [int(s) for s in splits.tolist()]
    return [int(s) for s in splits]


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall: splits[i] rows (dimension 0) go to rank i of the set
    (equal parts when None). synchronize() returns (output, received_splits)."""
    _check_tensor(tensor)
    h = _chorus.alltoall_async(tensor.detach(), _splits_list(splits), _name(name, "alltoall", process_set),
                               _set_id(process_set))

    def finish(outs):
        received = torch.tensor(h.received_splits(), dtype=torch.int32)
        return outs[0][0], received
    return _register(_Pending([h], finish))


class HorovodAlltoall(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.process_set = process_set
        ctx.received = received
        if splits is None:
            return output
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad_output, *unused):
        # The gradient goes back where each row came from.
        grad, _ = synchronize(alltoall_async(grad_output.contiguous(), ctx.received,
                                             process_set=ctx.process_set))
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Returns the rows received from every rank; with `splits` given, also the
    int32 tensor of rows received from each rank."""
    _check_tensor(tensor)
    return HorovodAlltoall.apply(tensor, splits, name, process_set)


# -- reducescatter -----------------------------------------------------------

def _reducescatter_op(op):
    # Also a RuntimeError, as Horovod's runtime reports it; the runtime
    # refuses Adasum (an allreduce op) with its own message.
    if op not in _CHORUS_OPS:
        raise ChorusValueError("reducescatter op %r is not one of Average, Sum, Min, Max, Product"
                               % (op,))
    return _chorus_op(op)


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    """Starts a reduction whose dimension 0 is split over the ranks: rank r
    gets its rows (the first rows % size ranks one more)."""
    _check_tensor(tensor)
    h = _chorus.reducescatter_async(tensor.detach(), _name(name, "reducescatter", process_set),
                                    _reducescatter_op(op), _factor(prescale_factor, "prescale_factor"),
                                    _factor(postscale_factor, "postscale_factor"), _set_id(process_set))
    return _register(_Pending([h], _first))


class HorovodReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.op = op
        ctx.process_set = process_set
        output = synchronize(reducescatter_async(tensor, name, op, process_set, prescale_factor,
                                                 postscale_factor))
        ctx.scale = float(prescale_factor) * float(postscale_factor)  # checked by the submission
        return output

    @staticmethod
    def backward(ctx, grad_output):
        # Horovod's gradient: the allgather of the incoming gradient, times
        # the set's size for Sum, times the scale factors.
        grad = grad_output * ctx.scale
        if ctx.op == Sum:
            grad = grad * ctx.process_set.size()
        return allgather(grad.contiguous(), process_set=ctx.process_set), None, None, None, None, None


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    _check_tensor(tensor)
    compressed, ctx = compression.compress(tensor)
    out = HorovodReducescatter.apply(compressed, name, op, process_set, prescale_factor,
                                     postscale_factor)
    return compression.decompress(out, ctx)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    """Starts a reducescatter of each tensor, negotiated as one unit."""
    _check_group(tensors)
    h = _chorus.grouped_reducescatter_async([t.detach() for t in tensors],
                                            _name(name, "grouped_reducescatter", process_set),
                                            _reducescatter_op(op),
                                            _factor(prescale_factor, "prescale_factor"),
                                            _factor(postscale_factor, "postscale_factor"),
                                            _set_id(process_set))
    return _register(_Pending([h], lambda outs: list(outs[0])))


class HorovodGroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.op = op
        ctx.process_set = process_set
        outputs = tuple(synchronize(grouped_reducescatter_async(list(tensors), name, op, process_set,
                                                                prescale_factor, postscale_factor)))
        ctx.scale = float(prescale_factor) * float(postscale_factor)  # checked by the submission
        return outputs

    @staticmethod
    def backward(ctx, *grad_output):
        # As for one tensor: the grouped allgather of the scaled gradients.
        factor = ctx.scale * (ctx.process_set.size() if ctx.op == Sum else 1)
        grads = [(g * factor).contiguous() for g in grad_output]
        return (None, None, None, None, None,
                *grouped_allgather(grads, process_set=ctx.process_set))


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """Reduces a list of tensors as one unit, this rank keeping its rows of
    each; differentiable."""
    _check_group(tensors)
    compressed = [compression.compress(t) for t in tensors]
    outs = HorovodGroupedReducescatter.apply(name, op, process_set, prescale_factor,
                                             postscale_factor, *[c for c, _ in compressed])
    return [compression.decompress(t, ctx) for t, (_, ctx) in zip(outs, compressed)]


# -- handles, join, barrier --------------------------------------------------

def poll(handle):
    """True once the op behind `handle` is done (synchronize won't block)."""
    if handle not in _handle_map:
        raise ValueError("handle %r is not an op in flight (already synchronized?)" % (handle,))
    return _handle_map[handle].poll()


def synchronize(handle):
    """Waits for the op behind `handle` and returns its result; raises
    HorovodInternalError (Chorus's error, with its message) when it failed."""
    pending = _handle_map.pop(handle, None)
    if pending is None:
        return None
    return pending.wait()


def join(device=-1):
    """Declares that this rank has no more data; returns the last rank to join."""
    return _chorus.join()


def barrier(process_set=global_process_set):
    _chorus.barrier(_set_id(process_set))
