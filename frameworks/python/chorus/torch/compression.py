"""Gradient compression for the allreduce (horovod.torch.Compression)."""
import torch


class Compressor:
    """Turns a tensor into what goes over the wire, and back."""

    @staticmethod
    def compress(tensor):
        """Returns (compressed tensor, context for decompress)."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class _CastCompressor(Compressor):
    """Sends floating-point tensors as `wire_dtype`; others unchanged."""
    wire_dtype = None

    @classmethod
    def compress(cls, tensor):
        dtype = tensor.dtype
        if dtype.is_floating_point and dtype != cls.wire_dtype:
            tensor = tensor.type(cls.wire_dtype)
        return tensor, dtype

    @classmethod
    def decompress(cls, tensor, ctx):
        if ctx.is_floating_point and tensor.dtype != ctx:
            tensor = tensor.type(ctx)
        return tensor


class FP16Compressor(_CastCompressor):
    wire_dtype = torch.float16


class BF16Compressor(_CastCompressor):
    wire_dtype = torch.bfloat16


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
