// MIXLAB_HD marks math written once and compiled for both the CPU and (under nvcc) CUDA.
#pragma once

#if defined(__CUDACC__)
#define MIXLAB_HD __host__ __device__ __forceinline__
#else
#define MIXLAB_HD inline
#endif
