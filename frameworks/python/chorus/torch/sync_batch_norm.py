"""SyncBatchNorm (horovod.torch.SyncBatchNorm): batch normalization whose
batch statistics are those of the global batch, every rank's samples of the
process set together, forward and backward.

Horovod's runs on CUDA tensors only, through PyTorch's CUDA-only kernels
(batch_norm_stats and friends); this one is written with ordinary tensor
ops, so it runs on CPU tensors (and on any device the collectives take)."""
import torch
import torch.nn.functional as F
from torch.autograd.function import Function, once_differentiable
from torch.nn.modules.batchnorm import _BatchNorm

from .basics import global_process_set, ProcessSet
from .mpi_ops import allgather, allreduce, Sum


class SyncBatchNorm(_BatchNorm):
    """Applies batch normalization over an (N, C, ...) input with the mean and
    variance of the whole process set's batch (every rank's N may differ).

    Arguments are torch.nn.BatchNorm*d's, plus `process_set` (the ranks whose
    batches are normalized together; Horovod 0.28.1 always uses every rank).
    In training the running statistics are updated from the global batch,
    identically on every rank; in eval mode (with running statistics) each rank
    normalizes alone with them. As in Horovod, the gradients of weight and bias
    are this rank's share: DistributedOptimizer's allreduce combines them."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_set=global_process_set):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        if not isinstance(process_set, ProcessSet):
            raise TypeError("process_set must be a ProcessSet, got %s" % type(process_set).__name__)
        self.process_set = process_set

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("SyncBatchNorm expected at least 2D input (N, C, ...), got {}D input"
                             .format(input.dim()))
        if input.size(1) != self.num_features:
            raise ValueError("SyncBatchNorm expected {} channels (dimension 1 of the input), got "
                             "input of shape {}".format(self.num_features, list(input.shape)))

    def forward(self, input):
        if not isinstance(input, torch.Tensor):
            raise TypeError("SyncBatchNorm input must be a torch.Tensor, got %s" % type(input).__name__)
        self._check_input_dim(input)
        # The running statistics and which statistics to use: as
        # torch.nn.BatchNorm*d decides them.
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        running_mean = self.running_mean if track else None
        running_var = self.running_var if track else None
        if not batch_stats or self.process_set.size() == 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, batch_stats,
                                factor, self.eps)
        return _SyncBatchNorm.apply(input, self.weight, self.bias, running_mean, running_var,
                                    self.eps, factor, self.process_set)


def _per_channel(t, dim):
    """(C,) -> (1, C, 1, ...) for an input of `dim` dimensions."""
    return t.view([1, -1] + [1] * (dim - 2))


def _sum_but_channel(t):
    return t.sum(dim=[d for d in range(t.dim()) if d != 1])


class _SyncBatchNorm(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, factor, process_set):
        # float16 and bfloat16 are computed in float32, as torch's CPU kernel does.
        compute = torch.float64 if input.dtype == torch.float64 else torch.float32
        x = input.to(compute)
        channels = x.size(1)
        count = x.numel() // channels
        # This rank's count, mean and sum of squared deviations per channel
        # (a rank with no samples contributes nothing), gathered in float64:
        # the ranks' means are combined exactly as Chan et al.'s pairwise
        # update does, without the cancellation of a sum of squares.
        if count > 0:
            mean = x.mean(dim=[d for d in range(x.dim()) if d != 1])
            m2 = _sum_but_channel((x - _per_channel(mean, x.dim())) ** 2)
        else:
            mean = m2 = torch.zeros(channels, dtype=compute, device=x.device)
        mine = torch.cat([torch.tensor([float(count)], dtype=torch.float64, device=x.device),
                          mean.double(), m2.double()])
        stats = allgather(mine.unsqueeze(0), name="sync_batch_norm.stats", process_set=process_set)
        counts = stats[:, :1]
        total = int(counts.sum().item())
        if total <= 1:
            raise ValueError("SyncBatchNorm expected more than 1 value per channel when training, got "
                             "{} over the process set's ranks (each rank's: {})"
                             .format(total, [int(c) for c in counts.view(-1).tolist()]))
        means = stats[:, 1:1 + channels]
        global_mean = (counts * means).sum(0) / total
        global_m2 = stats[:, 1 + channels:].sum(0) + (counts * (means - global_mean) ** 2).sum(0)
        invstd = torch.rsqrt(global_m2 / total + eps)
        if running_mean is not None:
            running_mean.mul_(1 - factor).add_((global_mean * factor).to(running_mean.dtype))
        if running_var is not None:
            # Unbiased, as torch.nn.BatchNorm*d keeps it.
            running_var.mul_(1 - factor).add_((global_m2 / (total - 1) * factor).to(running_var.dtype))

        mean_c = _per_channel(global_mean.to(compute), x.dim())
        invstd_c = _per_channel(invstd.to(compute), x.dim())
        out = (x - mean_c) * invstd_c
        if weight is not None:
            out = out * _per_channel(weight.to(compute), x.dim())
        if bias is not None:
            out = out + _per_channel(bias.to(compute), x.dim())
        ctx.save_for_backward(input, weight, mean_c, invstd_c)
        ctx.total = total
        ctx.process_set = process_set
        ctx.bias_dtype = None if bias is None else bias.dtype
        return out.to(input.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        input, weight, mean_c, invstd_c = ctx.saved_tensors
        need_input, need_weight, need_bias = ctx.needs_input_grad[0:3]
        compute = mean_c.dtype
        dy = grad_output.to(compute)
        xmu = input.to(compute) - mean_c
        sum_dy = _sum_but_channel(dy)
        sum_dy_xmu = _sum_but_channel(dy * xmu)
        grad_input = grad_weight = grad_bias = None
        # weight's and bias's gradients stay this rank's (Horovod's choice):
        # the optimizer's allreduce sums or averages them like any gradient.
        if weight is not None and need_weight:
            grad_weight = (sum_dy_xmu * invstd_c.view(-1)).to(weight.dtype)
        if ctx.bias_dtype is not None and need_bias:
            grad_bias = sum_dy.to(ctx.bias_dtype)
        if need_input:
            # The input's gradient needs the global sums of dy and dy*(x-mean).
            sums = allreduce(torch.cat([sum_dy, sum_dy_xmu]).double(), op=Sum,
                             name="sync_batch_norm.grad_sums", process_set=ctx.process_set)
            channels = sum_dy.numel()
            mean_dy = _per_channel((sums[:channels] / ctx.total).to(compute), dy.dim())
            mean_dy_xmu = _per_channel((sums[channels:] / ctx.total).to(compute), dy.dim())
            scale = invstd_c if weight is None else invstd_c * _per_channel(weight.to(compute), dy.dim())
            grad_input = (scale * (dy - mean_dy - xmu * invstd_c * invstd_c * mean_dy_xmu)).to(input.dtype)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None
