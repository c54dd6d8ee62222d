"""Error mapping of chorus.torch: bad arguments raise TypeError or ValueError
(the runtime's own refusals as chorus.ChorusValueError, both a ValueError and
HorovodInternalError), collectives that fail across ranks raise
HorovodInternalError with the runtime's message; after each, the runtime
goes on working. Every rank makes the same calls in the same order."""
import os

import pytest
import torch

import chorus
import chorus.torch as hvd


def still_works(size):
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), float(size)))


@pytest.mark.parametrize("call", [
    lambda: hvd.allreduce(3.0), lambda: hvd.allreduce_(3.0), lambda: hvd.allreduce_async(3.0),
    lambda: hvd.allgather([1.0]), lambda: hvd.broadcast(None, 0), lambda: hvd.broadcast_(None, 0),
    lambda: hvd.alltoall("x"), lambda: hvd.reducescatter(1)],
    ids=["allreduce", "allreduce_", "allreduce_async", "allgather", "broadcast", "broadcast_", "alltoall",
         "reducescatter"])
def test_non_tensor_input_is_a_type_error(call):
    with pytest.raises(TypeError, match=r"^tensor must be a torch\.Tensor, got (float|list|NoneType|str|int)$"):
        call()


def test_bad_groups():
    with pytest.raises(TypeError, match=r"^every tensor of the group must be a torch\.Tensor, got int$"):
        hvd.grouped_allreduce([torch.ones(2), 3])
    for op in (hvd.grouped_allreduce, hvd.grouped_allgather, hvd.grouped_reducescatter):
        # A tensor is not a list of tensors (its rows would be taken as the group).
        with pytest.raises(TypeError, match=r"^grouped ops take a list of tensors, got Tensor$"):
            op(torch.ones(2))
        with pytest.raises(ValueError, match=r"^grouped ops take a non-empty list of tensors$"):
            op([])


def test_bad_op_and_factors():
    with pytest.raises(ValueError, match=r"^op 'sum' is not one of Average, Sum, Adasum, Min, Max, Product$"):
        hvd.allreduce(torch.ones(2), op="sum")
    with pytest.raises(ValueError, match=r"^op 99 is not one of Average, Sum, Adasum, Min, Max, Product$"):
        hvd.grouped_allreduce([torch.ones(2)], op=99)
    with pytest.raises(ValueError, match=r"^reducescatter op 99 is not one of Average, Sum, Min, Max, Product$"):
        hvd.reducescatter(torch.ones(2), op=99)
    with pytest.raises(ValueError, match=r"^give op or the deprecated average, not both$"):
        hvd.allreduce(torch.ones(2), op=hvd.Sum, average=True)
    with pytest.raises(TypeError, match=r"^prescale_factor must be a number, got str$"):
        hvd.allreduce(torch.ones(2), prescale_factor="x")
    with pytest.raises(TypeError, match=r"^postscale_factor must be a number, got NoneType$"):
        hvd.grouped_allreduce([torch.ones(2)], postscale_factor=None)
    with pytest.raises(TypeError, match=r"^prescale_factor must be a number, got list$"):
        hvd.reducescatter(torch.ones(2), prescale_factor=[2])


@pytest.mark.parametrize("call", [hvd.allreduce_, hvd.allreduce_async_], ids=["allreduce_", "allreduce_async_"])
def test_in_place_allreduce_checks_like_the_others(size, call):
    # The in-place calls check the common case in one go and leave every
    # other call to the general path: its errors, word for word.
    with pytest.raises(ValueError, match=r"^op 99 is not one of Average, Sum, Adasum, Min, Max, Product$"):
        call(torch.ones(2), op=99)
    with pytest.raises(ValueError, match=r"^op 'sum' is not one of Average, Sum, Adasum, Min, Max, Product$"):
        call(torch.ones(2), op="sum")
    with pytest.raises(ValueError, match=r"^give op or the deprecated average, not both$"):
        call(torch.ones(2), op=hvd.Sum, average=True)
    with pytest.raises(TypeError, match=r"^name must be a str, got int$"):
        call(torch.ones(2), name=5)
    with pytest.raises(TypeError, match=r"^prescale_factor must be a number, got str$"):
        call(torch.ones(2), prescale_factor="x")
    with pytest.raises(TypeError, match=r"^tensor must be a torch.Tensor, got list$"):
        call([1.0, 2.0])
    # An int factor and the deprecated average= still work (the general path).
    t = torch.ones(2)
    with pytest.warns(DeprecationWarning):
        result = hvd.synchronize(call(t, average=False, prescale_factor=2)) if call is hvd.allreduce_async_ \
            else call(t, average=False, prescale_factor=2)
    assert result is t
    assert torch.equal(t, torch.full((2,), 2.0 * size))
    still_works(size)


def test_bad_names_roots_and_handles(size):
    with pytest.raises(TypeError, match=r"^name must be a str, got int$"):
        hvd.allreduce(torch.ones(2), name=5)
    with pytest.raises(TypeError, match=r"^root_rank must be an int, got str$"):
        hvd.broadcast(torch.ones(2), "0")
    # The runtime's check of the root: on this rank, before any negotiation.
    for root in (size, -1):
        expected = r"^'broadcast\.bc\.root': root rank %d is out of range; expected 0 to %d$" % (root, size - 1)
        with pytest.raises(hvd.ChorusValueError, match=expected):
            hvd.broadcast(torch.ones(2), root, name="bc.root")
    with pytest.raises(ValueError, match=r"^handle 12345 is not an op in flight \(already synchronized\?\)$"):
        hvd.poll(12345)
    still_works(size)


def test_bad_process_sets(rank, size):
    with pytest.raises(TypeError, match=r"^process_set must be a ProcessSet, got list$"):
        hvd.allreduce(torch.ones(2), process_set=[0])
    with pytest.raises(ValueError, match=r"^process set \[0\] is not registered: pass it to "
                                         r"init\(process_sets=\.\.\.\) or add_process_set\(\)$"):
        hvd.allgather(torch.ones(2), process_set=hvd.ProcessSet([0]))
    with pytest.raises(ValueError, match=r"^ProcessSet ranks \[0, 0\] contain a duplicate$"):
        hvd.ProcessSet([0, 0])
    with pytest.raises(hvd.ChorusValueError, match=r"add_process_set got rank %d in \[0, %d\]; expected ranks "
                                                   r"in \[0, %d\)" % (size + 5, size + 5, size)):
        hvd.add_process_set([0, size + 5])
    ps = hvd.add_process_set([0])
    try:
        if rank != 0:
            # Only members may submit to a set.
            expected = r"^allreduce 'allreduce\.not\.member': rank %d is not in process set %d \[0\]; " \
                       r"only the set's members may submit to it$" % (rank, ps.process_set_id)
            with pytest.raises(hvd.ChorusValueError, match=expected):
                hvd.allreduce(torch.ones(2), process_set=ps, name="not.member")
    finally:
        hvd.remove_process_set(ps)
    with pytest.raises(ValueError, match=r"not registered"):
        hvd.allreduce(torch.ones(2), process_set=ps)
    still_works(size)


def test_bad_dtypes_and_shapes_on_this_rank(size):
    with pytest.raises(hvd.ChorusValueError,
                       match=r"^tensor 'allreduce\.cx' has dtype ComplexFloat, which Chorus does not support; "
                             r"expected one of uint8, int8, int16, int32, int64, float16, bfloat16, float32, "
                             r"float64, bool"):
        hvd.allreduce(torch.ones(2, dtype=torch.complex64), name="cx")
    with pytest.raises(hvd.ChorusValueError, match=r"^'allreduce\.bool\.ar': allreduce does not support bool "
                                                   r"tensors \(only broadcast and allgather do\)$"):
        hvd.allreduce(torch.ones(2, dtype=torch.bool), name="bool.ar")
    for op, what in ((hvd.allgather, "allgather"), (hvd.reducescatter, "reducescatter")):
        with pytest.raises(hvd.ChorusValueError, match=r"^'%s\.scalar\.%s': %s needs a tensor with at least one "
                                                       r"dimension, not a scalar$" % (what, what, what)):
            op(torch.tensor(1.0), name="scalar." + what)
    with pytest.raises(hvd.ChorusValueError, match=r"^'grouped_allgather\.scalar\.gag\.0': allgather needs a "
                                                   r"tensor with at least one dimension, not a scalar$"):
        hvd.grouped_allgather([torch.tensor(1.0)], name="scalar.gag")
    with pytest.raises(ValueError, match=r"^alltoall splits must be integers, got a torch\.float32 tensor$"):
        hvd.alltoall(torch.ones(size), splits=torch.ones(size))
    with pytest.raises(hvd.ChorusValueError, match=r"^'alltoall\.a2a\.sum': alltoall splits sum to 1; expected the "
                                                   r"first dimension, 4$"):
        hvd.alltoall(torch.ones(4), splits=torch.tensor([1] + [0] * (size - 1)), name="a2a.sum")
    with pytest.raises(hvd.ChorusValueError, match=r"^'alltoall\.a2a\.len': alltoall got 1 splits; expected one "
                                                   r"per rank \(%d\)$" % size):
        hvd.alltoall(torch.ones(4), splits=torch.tensor([4]), name="a2a.len")
    with pytest.raises(hvd.ChorusValueError,
                       match=r"^'alltoall\.a2a\.neg': alltoall splits must be >= 0, got -1$"):
        hvd.alltoall(torch.ones(4), splits=torch.tensor([5, -1] + [0] * (size - 2)), name="a2a.neg")
    still_works(size)


def test_ranks_that_disagree_raise_horovod_internal_error(rank, size):
    # Found by the negotiation: every rank gets the same message, naming both.
    cases = [
        (lambda: hvd.allreduce(torch.ones(2, dtype=torch.float32 if rank == 0 else torch.float64), name="dt"),
         r"^Mismatched dtype for allreduce 'allreduce\.dt': rank 0 has float32, rank 1 has float64$"),
        (lambda: hvd.allreduce(torch.ones(rank + 1), name="sh"),
         r"^Mismatched shape for allreduce 'allreduce\.sh': rank 0 has \[1\], rank 1 has \[2\]$"),
        # The blocking in-place call submits and waits in one binding call.
        (lambda: hvd.allreduce_(torch.ones(rank + 1), name="sh_"),
         r"^Mismatched shape for allreduce 'allreduce\.sh_': rank 0 has \[1\], rank 1 has \[2\]$"),
        (lambda: hvd.allreduce(torch.ones(2), op=hvd.Sum if rank == 0 else hvd.Max, name="op"),
         r"^Mismatched reduce op for allreduce 'allreduce\.op': rank 0 has sum, rank 1 has max$"),
        (lambda: hvd.allgather(torch.ones(2, rank + 1), name="ag"),
         r"^Mismatched shape for allgather 'allgather\.ag': rank 0 has \[2, 1\], rank 1 has \[2, 2\]$"),
        (lambda: hvd.broadcast(torch.ones(rank + 1), 0, name="bc"),
         r"^Mismatched shape for broadcast 'broadcast\.bc': rank 0 has \[1\], rank 1 has \[2\]$"),
    ]
    for call, message in cases:
        with pytest.raises(hvd.HorovodInternalError, match=message) as info:
            call()
        assert type(info.value) is chorus.ChorusError  # not a ValueError: the arguments were each fine
        assert isinstance(info.value, RuntimeError)
    still_works(size)


class _CudaTensor(torch.Tensor):
    """A tensor that says it is on cuda:0, with no data: what a CUDA tensor
    looks like to the binding (Debian's torch cannot make a real one)."""

    @staticmethod
    def __new__(cls, shape):
        return torch.Tensor._make_wrapper_subclass(cls, shape, dtype=torch.float32,
                                                   device=torch.device("cuda", 0))

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.detach.default:
            return _CudaTensor(args[0].shape)
        raise RuntimeError("a stand-in CUDA tensor has no data (%s)" % func)


@pytest.mark.skipif(torch.cuda.is_available() or os.path.exists("/dev/nvidia0"),
                    reason="with a GPU, a CUDA tensor goes to Chorus's GPU path: the stand-in has no data")
@pytest.mark.parametrize("call", [
    lambda t: hvd.allreduce(t, name="cuda.t"), lambda t: hvd.allreduce_(t, name="cuda.t"),
    lambda t: hvd.allgather(t, name="cuda.t"), lambda t: hvd.broadcast(t, 0, name="cuda.t"),
    lambda t: hvd.alltoall(t, name="cuda.t"), lambda t: hvd.reducescatter(t, name="cuda.t"),
    lambda t: hvd.grouped_allreduce([t], name="cuda")],
    ids=["allreduce", "allreduce_", "allgather", "broadcast", "alltoall", "reducescatter", "grouped_allreduce"])
def test_cuda_tensor_without_a_gpu_path_is_refused(size, call):
    # The runtime's refusal, which says why: this build has no CUDA, or this
    # rank sees no GPU.
    # Names carry the op's kind ("allreduce.cuda.t"; a group's members ".0").
    expected = r"^tensor '(\w+\.cuda\.t|grouped_allreduce\.cuda\.0)' is on cuda:0 but " \
               r"(this build of Chorus has no CUDA support|this rank sees no CUDA device)"
    with pytest.raises(hvd.ChorusValueError, match=expected):
        call(_CudaTensor((4,)))
    still_works(size)


def test_tensor_on_a_device_chorus_has_no_kind_for(size):
    with pytest.raises(hvd.ChorusValueError, match=r"^tensor 'allreduce\.meta' is on device meta: no backend in this "
                                                   r"build supports tensors on meta$"):
        hvd.allreduce(torch.ones(2, device="meta"), name="meta")
    still_works(size)
