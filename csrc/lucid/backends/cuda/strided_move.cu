// Definitions of the strided copy, accumulation and fill of strided_move.h: one grid-stride kernel
// each over the coalesced element-stride geometry of offset_calculator.cuh (strided_geometry; 32-bit
// offsets with the fast divider when they fit). Copies and fills move raw bits by item size (4
// kernels for 9 dtypes), or 16-byte words where the layout allows (in_words; a one-element source
// into a dense destination is a splat); add_into computes per dtype.
#include <cstring>

#include "lucid/backends/cuda/cuda_dtype.cuh"
#include "lucid/backends/cuda/launch_geometry.cuh"
#include "lucid/backends/cuda/offset_calculator.cuh"
#include "lucid/backends/cuda/stream.h"
#include "lucid/backends/cuda/strided_move.h"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

// src's strides seen in dst's shape (right-aligned broadcast: missing and size-1 dims read stride 0).
Strides broadcast_strides(const Tensor& src, const Shape& shape) {
  Strides st(shape.size(), 0);
  int64_t off = static_cast<int64_t>(shape.size()) - src.ndim();
  LUCID_CHECK(off >= 0, ValueError, "cuda strided copy: source of shape ", shape_str(src.shape()),
              " does not broadcast to ", shape_str(shape));
  for (int64_t d = 0; d < src.ndim(); ++d) {
    LUCID_CHECK(src.shape()[d] == shape[d + off] || src.shape()[d] == 1, ValueError, "cuda strided copy: source of shape ",
                shape_str(src.shape()), " does not broadcast to ", shape_str(shape));
    st[d + off] = src.shape()[d] == 1 ? 0 : src.strides()[d];
  }
  return st;
}

template <class U, class Index>
__global__ void copy_kernel(U* dst, const U* src, OffsetCalculator<2, Index> ix, Index n) {
  LUCID_GRID_LOOP(Index, i, n) {
    Index off[2];
    ix.get(i, off);
    dst[off[0]] = src[off[1]];
  }
}

// dst[i] = the one element of src, for a dense dst of n16 16-byte words (the element's bits
// repeated 16 / sizeof(U) times per word).
template <class U>
__global__ void splat_kernel(uint4* dst, const U* src, int64_t n16) {
  union {
    U u[16 / sizeof(U)];
    uint4 w;
  } pack;
  const U v = *src;
#pragma unroll
  for (int k = 0; k < static_cast<int>(16 / sizeof(U)); ++k) pack.u[k] = v;
  LUCID_GRID_LOOP(int64_t, i, n16) dst[i] = pack.w;
}

// The copy's geometry in 16-byte words: when the innermost dim has stride 1 in both operands,
// its size and every other stride (of a dim of size > 1) are multiples of V = 16 / itemsize,
// and both data pointers are 16-byte aligned, the copy moves uint4 words over the same
// geometry with the innermost size and the strides divided by V (a quarter of the index
// arithmetic for float32, and 128-bit loads and stores). False (nothing set) otherwise.
bool in_words(const Tensor& dst, const Tensor& src, const Strides& sst, Shape& shape, Strides& ds, Strides& ss) {
  const int64_t nd = dst.ndim(), v = 16 / static_cast<int64_t>(itemsize(dst.dtype()));
  if (nd == 0 || reinterpret_cast<uintptr_t>(dst.data_ptr()) % 16 || reinterpret_cast<uintptr_t>(src.data_ptr()) % 16)
    return false;
  const Shape& sh = dst.shape();
  const Strides& dst_st = dst.strides();
  if (dst_st[nd - 1] != 1 || sst[nd - 1] != 1 || sh[nd - 1] % v) return false;
  shape = sh;
  ds = dst_st;
  ss = sst;
  for (int64_t d = 0; d + 1 < nd; ++d) {
    if (sh[d] == 1) {
      ds[d] = ss[d] = 0;
      continue;
    }
    if (ds[d] % v || ss[d] % v) return false;
    ds[d] /= v;
    ss[d] /= v;
  }
  shape[nd - 1] /= v;
  return true;
}

template <class T, class Index>
__global__ void add_kernel(T* dst, const T* src, OffsetCalculator<2, Index> ix, Index n) {
  LUCID_GRID_LOOP(Index, i, n) {
    Index off[2];
    ix.get(i, off);
    dst[off[0]] = add_values(dst[off[0]], src[off[1]]);
  }
}

template <class U, class Index>
__global__ void fill_kernel(U* dst, U value, OffsetCalculator<1, Index> ix, Index n) {
  LUCID_GRID_LOOP(Index, i, n) {
    Index off[1];
    ix.get(i, off);
    dst[off[0]] = value;
  }
}

}  // namespace

void strided_copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  const Device dev = dst.device();
  DeviceGuard g(dev);
  Strides sst = broadcast_strides(src, dst.shape());
  if (dst.dtype() != src.dtype()) {
    KernelFn copy = op_def(OpId::Copy).kernel(DeviceType::CUDA);
    LUCID_CHECK(copy, NotImplementedError, "copy: the converting copy is not implemented on ", dev.str());
    copy({Tensor::make_view(src, dst.shape(), sst, src.offset())}, {dst}, {{"dtype", dst.dtype()}});
    return;
  }
  cudaStream_t s = current_stream(dev);
  const size_t isz = itemsize(dst.dtype());
  const Geometry geo = strided_geometry<2>(dst.shape(), {&dst.strides(), &sst}, "strided_copy");
  if (geo.contiguous) {
    check_cuda(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), dst.numel() * isz, cudaMemcpyDeviceToDevice, s),
               "cudaMemcpyAsync(strided copy)");
    return;
  }
  bool all_broadcast = true;  // src is one element (every stride 0): a splat when dst is dense
  for (int64_t st : sst) all_broadcast = all_broadcast && st == 0;
  const size_t bytes = static_cast<size_t>(dst.numel()) * isz;
  if (all_broadcast && dst.is_contiguous() && bytes % 16 == 0 && reinterpret_cast<uintptr_t>(dst.data_ptr()) % 16 == 0) {
    const int64_t n16 = static_cast<int64_t>(bytes / 16);
    by_width(dst.dtype(), [&](auto tag) {
      using U = decltype(tag);
      splat_kernel<<<grid_for(n16), kThreads, 0, s>>>(static_cast<uint4*>(dst.data_ptr()), static_cast<const U*>(src.data_ptr()), n16);
    });
    check_launch("strided_copy");
    return;
  }
  Shape wshape;
  Strides wds, wss;
  if (in_words(dst, src, sst, wshape, wds, wss)) {
    with_offset_calculator<2>(strided_geometry<2>(wshape, {&wds, &wss}, "strided_copy"), [&](auto ix, auto n) {
      copy_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<uint4*>(dst.data_ptr()), static_cast<const uint4*>(src.data_ptr()), ix, n);
    });
    check_launch("strided_copy");
    return;
  }
  by_width(dst.dtype(), [&](auto tag) {
    using U = decltype(tag);
    with_offset_calculator<2>(geo, [&](auto ix, auto n) {
      copy_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<U*>(dst.data_ptr()), static_cast<const U*>(src.data_ptr()), ix, n);
    });
  });
  check_launch("strided_copy");
}

void add_into(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  LUCID_CHECK(dst.dtype() == src.dtype(), TypeError, "cuda add_into: dtypes differ");
  const Device dev = dst.device();
  DeviceGuard g(dev);
  Strides sst = broadcast_strides(src, dst.shape());
  cudaStream_t s = current_stream(dev);
  LUCID_DISPATCH_ALL(dst.dtype(), "add_into", [&] {
    using T = device_t<scalar_t>;
    with_offset_calculator<2>(strided_geometry<2>(dst.shape(), {&dst.strides(), &sst}, "add_into"), [&](auto ix, auto n) {
      add_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dst.data_ptr()), static_cast<const T*>(src.data_ptr()), ix, n);
    });
  });
  check_launch("add_into");
}

void fill(const Tensor& dst, double value) {
  if (dst.numel() == 0) return;
  const Device dev = dst.device();
  DeviceGuard g(dev);
  cudaStream_t s = current_stream(dev);
  uint64_t bits = 0;  // the value converted on the host exactly as the CPU's fill, as raw bits
  LUCID_DISPATCH_ALL(dst.dtype(), "fill", [&] {
    scalar_t sv = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(value));
    std::memcpy(&bits, &sv, sizeof sv);
  });
  by_width(dst.dtype(), [&](auto tag) {
    using U = decltype(tag);
    U v;
    std::memcpy(&v, &bits, sizeof v);
    with_offset_calculator<1>(strided_geometry<1>(dst.shape(), {&dst.strides()}, "fill"), [&](auto ix, auto n) {
      fill_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<U*>(dst.data_ptr()), v, ix, n);
    });
  });
  check_launch("fill");
}

void zero(const Tensor& dst) {
  if (dst.numel() == 0) return;
  LUCID_CHECK(dst.is_contiguous(), ValueError, "cuda zero: the destination must be contiguous");
  DeviceGuard g(dst.device());
  check_cuda(cudaMemsetAsync(dst.data_ptr(), 0, dst.numel() * itemsize(dst.dtype()), current_stream(dst.device())),
             "cudaMemsetAsync(zero)");
}

Tensor contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor c = Tensor::empty(t.shape(), t.dtype(), t.device());
  strided_copy(c, t);
  return c;
}

}  // namespace lucid::cuda
