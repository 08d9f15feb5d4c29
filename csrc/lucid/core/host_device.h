// LUCID_HOST_DEVICE marks a function that both the host compiler and nvcc's device side compile
// (scalar functors, ops/scalar_functors.h): `__host__ __device__` under nvcc, nothing otherwise.
#pragma once

#ifdef __CUDACC__
#define LUCID_HOST_DEVICE __host__ __device__
#else
#define LUCID_HOST_DEVICE
#endif
