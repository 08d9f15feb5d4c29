// Strided data movement on CUDA tensors, the device counterpart of backends/cpu/strided_copy.h: the
// movement, indexing and embedding kernels build views (shape, strides, offset; the same geometry
// as the CPU kernels, from ops/movement_util.h) and move data between them with these; CudaMoves
// hands them to the backend-neutral movement kernels (ops/movement_plan.h); by_width picks the
// unsigned type an element moves as. The kernels address their operands with offset_calculator.cuh
// (strided_geometry: element strides, negative ones included). All run on the current stream of
// the tensors' device; nothing synchronises.
#pragma once
#include <cstdint>

#include "lucid/core/tensor.h"

namespace lucid::cuda {

// Calls f(U{}) with U the unsigned integer type of the dtype's width: the data-movement kernels
// (strided copies, fills, gathers, scatters) move elements as their bits.
template <class F>
void by_width(DType t, const F& f) {
  switch (itemsize(t)) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

// dst = src, src broadcast to dst's shape. Same dtype: element moves by item size (any strides,
// negative too; a plain cudaMemcpyAsync when both are dense in the same order); different dtypes:
// the CUDA Copy kernel (the converting copy).
void strided_copy(const Tensor& dst, const Tensor& src);

// dst += src elementwise in the compute type (bool: or), src broadcast to dst, same dtype. dst
// must not overlap itself (no stride-0 dim of size > 1).
void add_into(const Tensor& dst, const Tensor& src);

// Every element of dst (any strides) = value, converted to dst's dtype as the CPU's fill.
void fill(const Tensor& dst, double value);

// dst (contiguous) = 0.
void zero(const Tensor& dst);

// t itself when contiguous, else a contiguous copy on its device (same dtype).
Tensor contiguous(const Tensor& t);

// The CUDA backend's primitives of ops/movement_plan.h.
struct CudaMoves {
  static void copy(const Tensor& dst, const Tensor& src) { strided_copy(dst, src); }
  static void add(const Tensor& dst, const Tensor& src) { add_into(dst, src); }
  static void fill(const Tensor& dst, double value) { cuda::fill(dst, value); }
  static void zero(const Tensor& dst) { cuda::zero(dst); }
};

}  // namespace lucid::cuda
