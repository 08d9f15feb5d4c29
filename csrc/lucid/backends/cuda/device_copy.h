// Same-device data movement of the CUDA backend, for its kernels (no dispatch): the converting
// strided copy behind the Copy kernel (backends/cuda/kernels/copy.cu) and every kernel's input
// casts, a fill with a value given by its bits, and a cast to a dtype. All run on the current
// stream of the tensors' device and return without waiting for it.
#pragma once
#include <cstdint>

#include "lucid/core/tensor.h"

namespace lucid::cuda {

// dst = src (broadcast to dst's shape), converted to dst's dtype with the CPU kernel's rules
// (cuda_dtype.cuh, convert); both on one CUDA device, any strides. A contiguous same-dtype copy
// of the same size is one cudaMemcpyAsync; a converting copy of strided or broadcast operands is
// a strided copy into a contiguous buffer, the cast, and a strided copy out, as needed.
void copy_on_device(const Tensor& dst, const Tensor& src);

// dst = src converted to dst's dtype, both contiguous with the same number of elements and of
// different dtypes (device_cast.cu: one kernel per dtype pair).
void cast_contiguous(const Tensor& dst, const Tensor& src);

// Every element of dst (any strides) = the value whose device bits are the low itemsize bytes of
// `bits`.
void fill_bits(const Tensor& dst, uint64_t bits);

// x converted to dt: x itself when it already has that dtype, else a new contiguous tensor on
// x's device.
Tensor cast_on_device(const Tensor& x, DType dt);

// A view of t without its broadcast: every dim of stride 0 and size > 1 gets size 1, so copying
// it moves each distinct element once (the copy back broadcasts it).
Tensor unexpanded(const Tensor& t);

}  // namespace lucid::cuda
