// CHORUS_HOST_DEVICE marks an inline function that CUDA kernels call as well
// as host code (__host__ __device__ under nvcc, nothing otherwise), so that
// a GPU computes exactly what the host does and the host can test it.
#pragma once

#ifdef __CUDACC__
#define CHORUS_HOST_DEVICE __host__ __device__
#else
#define CHORUS_HOST_DEVICE
#endif
