"""chorus.torch: the API of horovod.torch 0.28.1 on the Chorus runtime.

Replace `import horovod.torch as hvd` with `import chorus.torch as hvd`."""
from chorus import ChorusError, ChorusValueError  # noqa: F401
from .basics import (init, shutdown, is_initialized, rank, size, local_rank, local_size,
                     cross_rank, cross_size, is_homogeneous, mpi_threads_supported, mpi_built,
                     mpi_enabled, gloo_built, gloo_enabled, nccl_built, ddl_built, ccl_built,
                     cuda_built, rocm_built, start_timeline, stop_timeline, ProcessSet,
                     global_process_set, add_process_set, remove_process_set)
from .compression import Compression
from .mpi_ops import (Average, Sum, Adasum, Min, Max, Product, HorovodInternalError,
                      allreduce, allreduce_async, allreduce_, allreduce_async_,
                      grouped_allreduce, grouped_allreduce_async, grouped_allreduce_,
                      grouped_allreduce_async_, sparse_allreduce_async,
                      allgather, allgather_async, grouped_allgather, grouped_allgather_async,
                      broadcast, broadcast_async, broadcast_, broadcast_async_,
                      alltoall, alltoall_async, reducescatter, reducescatter_async,
                      grouped_reducescatter, grouped_reducescatter_async,
                      poll, synchronize, join, barrier)
from .functions import (broadcast_parameters, broadcast_optimizer_state, broadcast_object,
                        allgather_object)
from .optimizer import DistributedOptimizer
from . import elastic  # hvd.elastic, as in horovod.torch
