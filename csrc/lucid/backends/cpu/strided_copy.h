// Strided data movement for CPU kernels (movement, indexing, core): element moves by item size (a
// move is the same for every dtype of one width, so kernels instantiate 4 widths instead of 9
// dtypes), a strided copy, strided accumulation, a scalar fill, offset tables for gather-style
// kernels, and reading an index element. The kernels build views (shape, strides, offset) and
// move data between them with these; CpuMoves hands them to the backend-neutral movement kernels
// (ops/movement_plan.h).
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "lucid/backends/cpu/loops.h"
#include "lucid/core/tensor.h"

namespace lucid::cpu {

// Calls f(std::type_identity<U>{}) with U an unsigned integer type of the dtype's width.
template <class F>
void by_itemsize(DType t, const F& f) {
  switch (itemsize(t)) {
    case 1: f(std::type_identity<uint8_t>{}); break;
    case 2: f(std::type_identity<uint16_t>{}); break;
    case 4: f(std::type_identity<uint32_t>{}); break;
    default: f(std::type_identity<uint64_t>{}); break;
  }
}

// Element offsets (in elements) of every position of `shape` walked in row-major order with
// `strides`: the table gather-style kernels add to a base offset.
inline std::vector<int64_t> offset_table(const Shape& shape, const Strides& strides) {
  int64_t n = numel_of(shape);
  std::vector<int64_t> out(static_cast<size_t>(n));
  if (n == 0) return out;
  int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = off;
    for (int64_t d = nd - 1; d >= 0; --d) {
      off += strides[d];
      if (++idx[d] < shape[d]) break;
      off -= strides[d] * shape[d];
      idx[d] = 0;
    }
  }
  return out;
}

// dst = src (src broadcast to dst). Same dtype: typed strided moves by item size (also for
// negative strides); otherwise copy_into's converting copy.
void strided_copy(const Tensor& dst, const Tensor& src);

// dst += src elementwise (src broadcast to dst). Serial when dst may alias itself (stride 0).
void add_into(const Tensor& dst, const Tensor& src);

// Every element of dst (any strides) = value, converted to dst's dtype as PyTorch's fill_.
void fill(const Tensor& dst, double value);

// The CPU's primitives of ops/movement_plan.h.
struct CpuMoves {
  static void copy(const Tensor& dst, const Tensor& src) { strided_copy(dst, src); }
  static void add(const Tensor& dst, const Tensor& src) { add_into(dst, src); }
  static void fill(const Tensor& dst, double value) { cpu::fill(dst, value); }
  static void zero(const Tensor& dst) { std::memset(dst.data_ptr(), 0, dst.numel() * itemsize(dst.dtype())); }
};

// Reads an integer index tensor element as int64 (index tensors are int64 or int32).
inline int64_t read_index(const char* p, DType t) {
  if (t == DType::Int32) return *reinterpret_cast<const int32_t*>(p);
  return *reinterpret_cast<const int64_t*>(p);
}

}  // namespace lucid::cpu
