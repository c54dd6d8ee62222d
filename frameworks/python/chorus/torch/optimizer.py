"""DistributedOptimizer: wraps any torch.optim optimizer so that each
parameter's gradient is reduced over the ranks as soon as autograd has
accumulated it, overlapping communication with the rest of backward()
(horovod.torch.DistributedOptimizer's behaviour and arguments)."""
from contextlib import contextmanager
import warnings

import torch

from .basics import global_process_set, size
from .compression import Compression
from .mpi_ops import (Average, Adasum, allreduce_async_, grouped_allreduce_async_,
                      sparse_allreduce_async, synchronize)
from .functions import broadcast_object


def _split(items, n):
    """n contiguous parts of `items`, the first len % n one longer."""
    n = max(1, min(n, len(items)))
    q, r = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + q + (1 if i < r else 0)
        out.append(items[start:end])
        start = end
    return out


class _DistributedOptimizer:
    """Mixed into the wrapped optimizer's class (see DistributedOptimizer)."""

    def _chorus_setup(self, named_parameters, compression, backward_passes_per_step, op,
                      gradient_predivide_factor, groups, sparse_as_dense, process_set):
        all_params = [p for group in self.param_groups for p in group["params"]]
        if named_parameters is None:
            named_parameters = [("allreduce.noname.%d.%d" % (i, j), p)
                                for i, group in enumerate(self.param_groups)
                                for j, p in enumerate(group["params"])]
        else:
            named_parameters = list(named_parameters)
        if any(not isinstance(item, tuple) or len(item) != 2 for item in named_parameters):
            raise ValueError("named_parameters must be (name, parameter) pairs, as "
                             "model.named_parameters() gives")
        names = [name for name, _ in named_parameters]
        dups = sorted({n for n in names if names.count(n) > 1})
        if dups:
            raise ValueError("named_parameters names %s more than once; each name must be unique"
                             % ", ".join(dups))
        named_ids = {id(p) for _, p in named_parameters}
        unnamed = [id(p) for p in all_params if id(p) not in named_ids]
        if unnamed:
            raise ValueError("%d of the optimizer's parameters are not in named_parameters "
                             "(Python ids %s)" % (len(unnamed), ", ".join(map(str, unnamed))))
        if groups is not None and not (isinstance(groups, list) or
                                       (isinstance(groups, int) and groups > 0)):
            raise ValueError("groups should be a positive integer or a list of lists of tensors")

        self._compression = compression
        self._parameter_names = {p: name for name, p in named_parameters}
        self.backward_passes_per_step = backward_passes_per_step
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set
        self._delay = {p: backward_passes_per_step for p in all_params}
        self._handles = {}   # parameter or group tuple -> (handle or None, ctx)
        self._requires_update = [p for p in all_params if p.requires_grad]
        self._grad_accs = []
        self._synchronized = False
        self._should_synchronize = True
        self._groups = groups
        self._group_of = {}
        self._group_ready = {}
        if process_set.included() and size() > 1:
            self._register_hooks()

    def _register_hooks(self):
        if self._groups is not None:
            # Groups must be the same on every rank: order by rank 0's names.
            order = broadcast_object([self._parameter_names[p] for p in self._requires_update],
                                     root_rank=0, process_set=self.process_set)
            params = sorted(self._requires_update, key=lambda p: order.index(self._parameter_names[p]))
            if isinstance(self._groups, list):
                wanted = {id(p) for p in params}
                groups = [[p for p in g if id(p) in wanted] for g in self._groups]
                grouped = {id(p) for g in groups for p in g}
                groups += [[p] for p in params if id(p) not in grouped]
            else:
                groups = _split(params, self._groups)
            for g in groups:
                g = tuple(g)
                for p in g:
                    self._group_of[p] = g
                self._group_ready[g] = 0
        for p in self._requires_update:
            # The gradient accumulator runs after autograd added this pass's
            # gradient into p.grad: the hook then sees the accumulated value.
            accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
            accumulator.register_hook(self._make_hook(p))
            self._grad_accs.append(accumulator)

    def _scale_factors(self):
        if self.op == Average:
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _reduce_async(self, p):
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        name = self._parameter_names[p]
        grad = p.grad
        if grad.is_sparse:
            if not self.sparse_as_dense:
                return sparse_allreduce_async(grad, name=name, op=self.op,
                                              process_set=self.process_set), None
            # Reduced dense; .grad stays sparse (synchronize writes it back
            # sparse), as optimizers such as SparseAdam require.
            grad = grad.to_dense()
        compressed, ctx = self._compression.compress(grad)
        pre, post = self._scale_factors()
        return allreduce_async_(compressed, name=name, op=self.op, prescale_factor=pre,
                                postscale_factor=post, process_set=self.process_set), ctx

    def _reduce_group_async(self, group):
        compressed, ctxs = zip(*[self._compression.compress(p.grad) for p in group])
        pre, post = self._scale_factors()
        return grouped_allreduce_async_(list(compressed), name=self._parameter_names[group[0]], op=self.op,
                                        prescale_factor=pre, postscale_factor=post,
                                        process_set=self.process_set), ctxs

    def _make_hook(self, p):
        def hook(*unused):
            if self._delay[p] <= 0:
                raise AssertionError("parameter '%s' got a gradient %d times without step(): "
                                     "backward_passes_per_step is %d"
                                     % (self._parameter_names[p], self.backward_passes_per_step + 1,
                                        self.backward_passes_per_step))
            self._delay[p] -= 1
            if self._delay[p] > 0:
                self._handles[p] = (None, None)
                return
            if self._groups is not None:
                group = self._group_of[p]
                self._group_ready[group] += 1
                self._handles.pop(p, None)
                if self._group_ready[group] == len(group):
                    self._handles[group] = self._reduce_group_async(group)
                    self._group_ready[group] = 0
                return
            self._handles[p] = self._reduce_async(p)
        return hook

    def synchronize(self):
        """Waits for every gradient's reduction (starting those autograd did
        not reach, e.g. unused parameters) and writes the results to .grad."""
        if not self.process_set.included():
            self._synchronized = True
            return
        if size() > 1:
            done = set()
            for key in self._handles:
                done.update(key if isinstance(key, tuple) else (key,))
            for p in self._requires_update:
                if p not in done:
                    self._handles[p] = (None, None)
            for key, (handle, ctx) in list(self._handles.items()):
                if handle is None:
                    if isinstance(key, tuple):
                        self._handles[key] = self._reduce_group_async(key)
                    else:
                        self._handles[key] = self._reduce_async(key)
            for key, (handle, ctx) in self._handles.items():
                if isinstance(key, tuple):
                    for p, out, c in zip(key, synchronize(handle), ctx):
                        self._delay[p] = self.backward_passes_per_step
                        p.grad.set_(self._compression.decompress(out, c))
                    self._group_ready[key] = 0
                else:
                    out = handle() if callable(handle) else synchronize(handle)
                    self._delay[key] = self.backward_passes_per_step
                    if key.grad.is_sparse:
                        out = self._compression.decompress(out, ctx) if ctx is not None else out
                        key.grad.zero_().add_(out if out.is_sparse else out.to_sparse())
                    else:
                        result = self._compression.decompress(out, ctx)
                        # Uncompressed, the in-place allreduce's result is
                        # .grad itself: no set_ (a dispatched op) needed.
                        if result is not key.grad:
                            key.grad.set_(result)
            self._handles.clear()
        self._synchronized = True

    @contextmanager
    def skip_synchronize(self):
        """step() inside this block does not synchronize (the caller already did)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                # Horovod's scripts and tests match the text's start.
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "after optimizer.synchronize(): the gradients are reduced a "
                              "second time")
            self.synchronize()
        self._synchronized = False
        return self._chorus_wrapped.step(self, closure)

    def zero_grad(self, *args, **kwargs):
        if any(h is not None for h, _ in self._handles.values()):
            raise AssertionError("zero_grad() while gradient reductions are in flight (after "
                                 "backward(), before step() or synchronize()): they would "
                                 "write into the zeroed gradients")
        return self._chorus_wrapped.zero_grad(self, *args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        self._handles = {}
        self._synchronized = False
        self._should_synchronize = True
        for p in self._delay:
            self._delay[p] = self.backward_passes_per_step
        return self._chorus_wrapped.load_state_dict(self, *args, **kwargs)

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        for p in self._delay:
            self._delay[p] = passes


class _DistributedAdasumOptimizer(_DistributedOptimizer):
    """op=Adasum, Horovod's delta optimizer: as autograd finishes each
    parameter's gradient, the wrapped optimizer steps that parameter alone
    from where step() last left it; the change it made (the delta) is
    combined over the ranks by an Adasum allreduce, and step() sets the
    parameter to its starting value plus the combined delta. Gradients are
    never reduced, so the learning rate is not scaled by the number of ranks."""

    def _chorus_setup(self, *args):
        super()._chorus_setup(*args)
        # Each parameter's value when its step began (step() adds the delta).
        self._starts = {p: torch.zeros_like(p, requires_grad=False) for p in self._requires_update}

    def _register_hooks(self):
        if self._groups is not None:
            raise ValueError("DistributedOptimizer(op=Adasum) does not take groups: each "
                             "parameter's delta is its own allreduce")
        super()._register_hooks()

    def _reduce_async(self, p):
        # Step p alone: the other parameters are out of every group meanwhile.
        kept = [group["params"] for group in self.param_groups]
        for group in self.param_groups:
            group["params"] = [q for q in group["params"] if q is p]
        try:
            start = self._starts[p]
            start.copy_(p.data)
            self._chorus_wrapped.step(self)
            p.data.sub_(start)
        finally:
            for group, params in zip(self.param_groups, kept):
                group["params"] = params
        compressed, ctx = self._compression.compress(p.data)
        return allreduce_async_(compressed, name=self._parameter_names[p], op=Adasum,
                                process_set=self.process_set), ctx

    def synchronize(self):
        # Nothing to wait for before step(): the deltas are step()'s.
        pass

    @contextmanager
    def skip_synchronize(self):
        raise AssertionError("skip_synchronize() does not apply to op=Adasum: step() combines "
                             "the parameters' updates, not their gradients")
        yield  # pragma: no cover

    def step(self, closure=None):
        if size() == 1 or not self.process_set.included():
            return self._chorus_wrapped.step(self, closure)
        loss = closure() if closure is not None else None
        for p in self._requires_update:
            # Parameters autograd did not reach, or reached fewer than
            # backward_passes_per_step times, step now.
            handle, _ = self._handles.get(p, (None, None))
            if handle is None:
                self._handles[p] = self._reduce_async(p)
        for p, (handle, ctx) in self._handles.items():
            delta = self._compression.decompress(synchronize(handle), ctx)
            start = self._starts[p]
            start.add_(delta)
            p.data.copy_(start)
            self._delay[p] = self.backward_passes_per_step
        self._handles.clear()
        return loss


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set):
    """Returns an optimizer of a subclass of optimizer's class, over the same
    param_groups and state, whose step() first averages (op) the gradients
    over process_set."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError("DistributedOptimizer wraps a torch.optim.Optimizer, got %s"
                        % type(optimizer).__name__)
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor applies to op=Average only, got op=%r" % (op,))
    if num_groups != 0:
        warnings.warn("num_groups is deprecated: use groups", DeprecationWarning)
        if groups is None:
            groups = num_groups
    if backward_passes_per_step <= 0:
        raise ValueError("backward_passes_per_step must be a positive number of passes, got %r"
                         % (backward_passes_per_step,))
    base = optimizer.__class__
    mixin = _DistributedAdasumOptimizer if op == Adasum else _DistributedOptimizer
    cls = type(base.__name__, (mixin, base), {"_chorus_wrapped": base})
    distributed = cls.__new__(cls)
    # The same object's state: param_groups, state and defaults are shared.
    distributed.__dict__.update(optimizer.__dict__)
    distributed._chorus_setup(named_parameters, compression, backward_passes_per_step, op,
                              gradient_predivide_factor, groups, sparse_as_dense, process_set)
    return distributed
