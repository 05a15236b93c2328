// STAG_HD marks a scalar formula that both the host compilers and nvcc compile (for device
// code), so that the CPU and CUDA kernels share one definition of each formula.
#pragma once

#if defined(__CUDACC__)
#define STAG_HD __host__ __device__
#else
#define STAG_HD
#endif
