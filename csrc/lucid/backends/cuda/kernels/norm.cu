// CUDA kernels of LayerNorm, RmsNorm, GroupNorm and NormBackward (records in ops/nn_norm.cpp), over
// the [P, Q, S] view of NormLayout (ops/nn_layout.h), the CPU's math (backends/cpu/kernels/norm.cpp).
// Two families, by layout:
//   - rows (layer and rms norm: q is one contiguous row of S elements, a parameter per element):
//     a warp per row up to 1024 elements, a block per row above, 16-byte packed loads where the
//     width and alignment allow, the row held in registers up to 8192 elements; statistics in
//     the compute type (float for float32 and 16-bit inputs, as torch's CUDA kernels; double for
//     float64), exact two-pass (mean, then squared deviations). The backward's input gradient is
//     the same shape of kernel; the parameter gradients are a column reduction: tiles of 32
//     columns x a chunk of rows into partials, then a second kernel sums the partials in order.
//   - blocks (group norm; batch norm's backward where cuDNN does not take it): a block per q,
//     statistics over (p, s) in double, two passes; the backward's per-channel sums are then
//     summed over q in a fixed order.
// Every sum has a fixed shape that depends only on the tensors' shapes (and, for the rows, whether
// they are 16-byte aligned), so results do not change from run to run. Weights and biases of x's
// dtype are read as they are; other dtypes (and the block family) read float64 copies.
// BatchNorm's forward is batch_norm.cu's; BatchNorm's backward with batch statistics runs on cuDNN
// (batch_norm_cudnn.cpp) where cuDNN takes the case, else here.
#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <initializer_list>
#include <type_traits>

#include "lucid/backends/cuda/elementwise_launch.cuh"
#include "lucid/backends/cuda/kernels/batch_norm_cudnn.h"
#include "lucid/backends/cuda/kernels/reduce_driver.cuh"
#include "lucid/ops/nn_layout.h"

namespace lucid::cuda {

namespace {

using nnutil::NormLayout;

// A float64 contiguous device copy of a parameter (undefined stays undefined).
Tensor params_f64(const Tensor& t) { return t.defined() ? contiguous_as(t, DType::Float64) : Tensor(); }
const double* ptr(const Tensor& t) { return t.defined() ? t.data<double>() : nullptr; }

// ---- rows: layer/rms norm (and any per-element layout of one row per q, P == 1) -----------------
// Row q is x[q * S, (q + 1) * S), read in packs of VEC elements (16 bytes: float4 for float32)
// when the row width and every pointer allow it, else one by one (VEC 1). A thread takes packs
// tid, tid + nthreads, ... of its row. Up to K packs per thread (cache_packs: 32 elements of each
// operand; 16 for float64 and unpacked rows) the row is read once into registers (RowPacks): a
// warp per row while 32 threads hold it (1024 elements; 512 for float64 or unpacked), else a
// block of up to kCachedThreads per row (8192; 4096); wider rows take a block of up to 1024
// threads that re-reads the row (from cache) at each pass. Statistics accumulate in the compute
// type (float for float32 and 16-bit, double for float64), exactly in two passes (mean, then
// squared deviations). Sums are butterfly shuffles within a warp, then the warps' sums in order:
// every thread gets the same bits, and the result depends only on the shape and the packing.
constexpr int kWarpRowThreads = 256;  // 8 warps, 8 rows per block
constexpr int kCachedThreads = 256;   // most threads of a block row held in registers

using launch_detail::AlignedVec;

// Layouts whose q is one contiguous row with a parameter per element (layer/rms norm, group norm of one
// group per sample of 1x1 channels); W == S rules out an empty batch-norm channel (W 1, S 0).
bool row_path(const NormLayout& L) { return L.P == 1 && L.qmod == 1 && L.sdiv == 1 && L.W == L.S; }

// Which row a thread works on, its index within the row's threads, and their number.
struct RowThreads {
  int64_t row;
  int tid, nthreads;
  __device__ explicit RowThreads(bool warp_rows)
      : row(warp_rows ? static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32 : blockIdx.x),
        tid(warp_rows ? threadIdx.x % 32 : threadIdx.x),
        nthreads(warp_rows ? 32 : blockDim.x) {}
};

// Sum of v over the row's threads, returned to each of them (`scratch`: 32 values of shared
// memory; block rows call it from every thread of the block).
template <class C>
__device__ __forceinline__ C row_sum(C v, bool warp_rows, C* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (warp_rows) return v;
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  C r = 0;
  for (int i = 0; i < static_cast<int>(blockDim.x / 32); ++i) r += scratch[i];
  __syncthreads();
  return r;
}

// p[i0, i0 + VEC) in the compute type C (one 16-byte load when VEC > 1: p + i0 is aligned).
template <int VEC, class T, class C>
__device__ __forceinline__ void load_pack(const T* p, int64_t i0, C (&v)[VEC]) {
  if constexpr (VEC == 1) {
    v[0] = static_cast<C>(load(p, i0));
  } else {
    const AlignedVec<device_t<T>, VEC> k = *reinterpret_cast<const AlignedVec<device_t<T>, VEC>*>(p + i0);
#pragma unroll
    for (int j = 0; j < VEC; ++j) v[j] = static_cast<C>(to_compute(k.val[j]));
  }
}

template <int VEC, class T, class C>
__device__ __forceinline__ void store_pack(T* p, int64_t i0, const C (&v)[VEC]) {
  if constexpr (VEC == 1) {
    store(p, i0, v[0]);
  } else {
    AlignedVec<device_t<T>, VEC> k;
#pragma unroll
    for (int j = 0; j < VEC; ++j) k.val[j] = from_compute<device_t<T>>(v[j]);
    *reinterpret_cast<AlignedVec<device_t<T>, VEC>*>(p + i0) = k;
  }
}

// An affine parameter pack: P is x's type T (read in packs as x) or double (a converted copy,
// read one by one); a missing parameter is dflt.
template <int VEC, class T, class P, class C>
__device__ __forceinline__ void load_param(const P* p, int64_t i0, C dflt, C (&v)[VEC]) {
  if (!p) {
#pragma unroll
    for (int j = 0; j < VEC; ++j) v[j] = dflt;
  } else if constexpr (std::is_same_v<P, T>) {
    load_pack<VEC>(p, i0, v);
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j) v[j] = static_cast<C>(p[i0 + j]);
  }
}

// Packs per thread held in registers by a cached row kernel: 32 elements per operand, 16 for
// float64 and for unpacked (VEC 1) rows, whose per-element addresses cost registers too.
template <class C, int VEC>
constexpr int cache_packs() {
  return VEC == 1 ? 16 : (sizeof(C) == 8 ? 16 : 32) / VEC;
}

// This thread's packs of N operand rows (pointers p[0..N), the same offsets): with K > 0 at most
// K packs, read once into registers when constructed; with K == 0 read from memory at each pass.
// each(f) calls f(i0, u) for each pack, i0 its first element and u[n][j] element i0 + j of
// operand n, in a fixed order.
template <int N, int VEC, int K, class T, class C>
struct RowPacks {
  const T* p[N];
  int64_t nv;
  int tid, nt;
  C v[K > 0 ? K : 1][N][VEC];

  template <class... Ptr>
  __device__ __forceinline__ RowPacks(const RowThreads& t, int64_t nvec, Ptr... ptrs)
      : p{ptrs...}, nv(nvec), tid(t.tid), nt(t.nthreads) {
    if constexpr (K > 0) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int i = tid + k * nt;  // int: a cached row has at most K * kCachedThreads packs
        if (i < nv) read(i, v[k]);
      }
    }
  }

  __device__ __forceinline__ void read(int64_t i, C (&u)[N][VEC]) const {
#pragma unroll
    for (int n = 0; n < N; ++n) load_pack<VEC>(p[n], i * VEC, u[n]);
  }

  template <class F>
  __device__ __forceinline__ void each(const F& f) const {
    if constexpr (K > 0) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int i = tid + k * nt;
        if (i < nv) f(static_cast<int64_t>(i) * VEC, v[k]);
      }
    } else {
#pragma unroll 2
      for (int64_t i = tid; i < nv; i += nt) {
        C u[N][VEC];
        read(i, u);
        f(i * VEC, u);
      }
    }
  }
};

template <class T, class P, int VEC, int K>
__global__ void __launch_bounds__(K > 0 ? kCachedThreads : 1024)
    row_forward_kernel(const T* x, T* y, compute_t<T>* mean_out, compute_t<T>* rstd_out, int64_t Q, int64_t S, bool centered,
                       bool warp_rows, const P* w, const P* b, double eps) {
  using C = compute_t<T>;
  __shared__ C scratch[32];
  const RowThreads t(warp_rows);
  if (t.row >= Q) return;  // only warp rows: a block row is always < Q
  const C n = static_cast<C>(S);
  const RowPacks<1, VEC, K, T, C> xs(t, S / VEC, x + t.row * S);
  C m = 0;
  if (centered) {
    C acc = 0;
    xs.each([&](int64_t, const C (&u)[1][VEC]) {
#pragma unroll
      for (int j = 0; j < VEC; ++j) acc += u[0][j];
    });
    m = row_sum(acc, warp_rows, scratch) / n;
  }
  C acc = 0;
  xs.each([&](int64_t, const C (&u)[1][VEC]) {
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      const C d = u[0][j] - m;
      acc += d * d;
    }
  });
  const C r = static_cast<C>(1.0 / sqrt(static_cast<double>(row_sum(acc, warp_rows, scratch) / n) + eps));
  if (t.tid == 0) {
    mean_out[t.row] = m;
    rstd_out[t.row] = r;
  }
  T* yr = y + t.row * S;
  xs.each([&](int64_t i0, const C (&u)[1][VEC]) {
    C wv[VEC], bv[VEC], o[VEC];
    load_param<VEC, T>(w, i0, C(1), wv);
    load_param<VEC, T>(b, i0, C(0), bv);
#pragma unroll
    for (int j = 0; j < VEC; ++j) o[j] = (u[0][j] - m) * r * wv[j] + bv[j];
    store_pack<VEC>(yr, i0, o);
  });
}

// The input gradient of row q: gx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)) (without
// the two means when the statistics are given, batch_stats false; without mean(g*w) for rms).
template <class T, class P, int VEC, int K>
__global__ void __launch_bounds__(K > 0 ? kCachedThreads : 1024)
    row_backward_kernel(const T* g, const T* x, const compute_t<T>* mean, const compute_t<T>* rstd, const P* w, int64_t Q,
                        int64_t S, bool centered, bool batch_stats, bool warp_rows, T* gx) {
  using C = compute_t<T>;
  __shared__ C scratch[32];
  const RowThreads t(warp_rows);
  if (t.row >= Q) return;
  const C n = static_cast<C>(S), m = mean[t.row], r = rstd[t.row];
  const RowPacks<2, VEC, K, T, C> gxs(t, S / VEC, g + t.row * S, x + t.row * S);  // u[0]: g, u[1]: x
  C ac = 0, bco = 0;
  if (batch_stats) {
    C a0 = 0, a1 = 0;
    gxs.each([&](int64_t i0, const C (&u)[2][VEC]) {
      C wv[VEC];
      load_param<VEC, T>(w, i0, C(1), wv);
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const C gw = u[0][j] * wv[j];
        a0 += gw;
        a1 += gw * ((u[1][j] - m) * r);
      }
    });
    const C sum_gw = row_sum(a0, warp_rows, scratch), sum_gwxh = row_sum(a1, warp_rows, scratch);
    ac = centered ? sum_gw / n : C(0);
    bco = sum_gwxh / n;
  }
  T* gxr = gx + t.row * S;
  gxs.each([&](int64_t i0, const C (&u)[2][VEC]) {
    C wv[VEC], o[VEC];
    load_param<VEC, T>(w, i0, C(1), wv);
#pragma unroll
    for (int j = 0; j < VEC; ++j) o[j] = r * (u[0][j] * wv[j] - ac - (u[1][j] - m) * r * bco);
    store_pack<VEC>(gxr, i0, o);
  });
}

// The parameter gradients of rows, a column reduction: gw[s] = sum over q of g * xhat and gb[s] =
// sum of g. Block (sx, sp) of kColTile x kColRows threads sums columns [32 sx, 32 sx + 32) over
// rows [sp * qchunk, (sp + 1) * qchunk), each thread every kColRows-th row, then the block's
// kColRows partials in order into part[sp * S + s]; sum_parts_kernel adds the nsplit partials.
constexpr int kColTile = 32, kColRows = 8;

template <class T>
__global__ void __launch_bounds__(kColTile * kColRows) row_param_kernel(const T* g, const T* x, const compute_t<T>* mean,
                                                                      const compute_t<T>* rstd, int64_t Q, int64_t S,
                                                                      int64_t qchunk, compute_t<T>* part_w,
                                                                      compute_t<T>* part_b) {
  using C = compute_t<T>;
  __shared__ C sw_s[kColRows][kColTile + 1], sb_s[kColRows][kColTile + 1];
  const int tx = threadIdx.x % kColTile, ty = threadIdx.x / kColTile;
  const int64_t s = static_cast<int64_t>(blockIdx.x) * kColTile + tx;
  const int64_t sp = blockIdx.y, q1 = min(Q, (sp + 1) * qchunk);
  C sw = 0, sb = 0;
  if (s < S) {
#pragma unroll 4
    for (int64_t q = sp * qchunk + ty; q < q1; q += kColRows) {
      const C gv = load(g, q * S + s);
      sw += gv * ((load(x, q * S + s) - mean[q]) * rstd[q]);
      sb += gv;
    }
  }
  sw_s[ty][tx] = sw;
  sb_s[ty][tx] = sb;
  __syncthreads();
  if (ty == 0 && s < S) {
    for (int i = 1; i < kColRows; ++i) {
      sw += sw_s[i][tx];
      sb += sb_s[i][tx];
    }
    part_w[sp * S + s] = sw;
    part_b[sp * S + s] = sb;
  }
}

// out[k] = sum of part[sp * W + k] over the nsplit rows, in order.
template <class C>
__global__ void sum_parts_kernel(const C* part_w, const C* part_b, int64_t nsplit, int64_t W, C* gw, C* gb) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= W) return;
  C sw = 0, sb = 0;
  for (int64_t sp = 0; sp < nsplit; ++sp) {
    sw += part_w[sp * W + k];
    sb += part_b[sp * W + k];
  }
  gw[k] = sw;
  gb[k] = sb;
}

struct RowGrid {
  unsigned blocks;
  int threads;
  bool warp_rows, cached;
};

// Rows of nv packs, k of them per thread when cached: a warp per row when 32 threads hold it, a
// block of fewer than kCachedThreads when those do, else an uncached block of about 4 packs per
// thread.
RowGrid row_grid(int64_t Q, int64_t nv, int k) {
  LUCID_CHECK(Q < (int64_t{1} << 31), NotImplementedError, "norm: more than 2^31 rows on CUDA");
  auto warps = [](int64_t t, int64_t lo, int64_t hi) { return static_cast<int>(std::clamp<int64_t>((t + 31) / 32 * 32, lo, hi)); };
  if (nv <= 32 * k) return {blocks_covering(Q, kWarpRowThreads / 32), kWarpRowThreads, true, true};
  if (nv <= int64_t{kCachedThreads} * k) return {static_cast<unsigned>(Q), warps((nv + k - 1) / k, 64, kCachedThreads), false, true};
  return {static_cast<unsigned>(Q), warps((nv + 3) / 4, 128, 1024), false, false};
}

// Launches kernel<VEC, K> (VEC: V or 1 as vec says; K: cache_packs<C, VEC> or 0 as row_grid says)
// over the rows: launch(kernel pointer, grid).
template <class C, int V, class Pick, class Launch>
void launch_rows(int64_t Q, int64_t S, int vec, const Pick& pick, const Launch& launch) {
  auto go = [&](auto vc) {
    constexpr int VV = decltype(vc)::value, KC = cache_packs<C, VV>();
    const RowGrid rg = row_grid(Q, S / VV, KC);
    launch(rg.cached ? pick(std::integral_constant<int, VV>{}, std::integral_constant<int, KC>{})
                     : pick(std::integral_constant<int, VV>{}, std::integral_constant<int, 0>{}),
           rg);
  };
  if (vec == V) go(std::integral_constant<int, V>{});
  else go(std::integral_constant<int, 1>{});
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Runs f(wp, bp) with the affine parameters as T pointers (both T or missing: read in x's packs)
// or else as float64 copies (a mixed-dtype call).
template <class T, class F>
void with_row_params(const Tensor& weight, const Tensor& bias, DType xt, const F& f) {
  auto same = [&](const Tensor& p) { return !p.defined() || p.dtype() == xt; };
  if (same(weight) && same(bias)) {
    Tensor w = weight.defined() ? weight.contiguous_data() : Tensor(), b = bias.defined() ? bias.contiguous_data() : Tensor();
    f(w.defined() ? w.data<T>() : static_cast<const T*>(nullptr), b.defined() ? b.data<T>() : static_cast<const T*>(nullptr));
  } else {
    Tensor w = params_f64(weight), b = params_f64(bias);
    f(ptr(w), ptr(b));
  }
}

// VEC when S is a multiple of it and every pointer (null ones aside) is 16-byte aligned, else 1.
template <int VEC>
int pick_vec(int64_t S, std::initializer_list<const void*> ptrs) {
  if (S % VEC != 0) return 1;
  for (const void* p : ptrs)
    if (p && !aligned16(p)) return 1;
  return VEC;
}

void run_row_forward(const Tensor& x, const TensorList& out, const NormLayout& L, const Tensor& weight, const Tensor& bias,
                     double eps, const char* op) {
  cudaStream_t stream = current_stream(out[0].device());
  LUCID_DISPATCH_FLOATING(x.dtype(), op, [&] {
    using C = compute_t<scalar_t>;
    constexpr int V = 16 / sizeof(scalar_t);
    with_row_params<scalar_t>(weight, bias, x.dtype(), [&](auto* wp, auto* bp) {
      using P = std::remove_const_t<std::remove_pointer_t<decltype(wp)>>;
      const bool pvec = std::is_same_v<P, scalar_t>;
      const int vec = pick_vec<V>(L.S, {x.data<scalar_t>(), out[0].data<scalar_t>(), pvec ? wp : nullptr, pvec ? bp : nullptr});
      auto pick = [](auto vc, auto kc) { return row_forward_kernel<scalar_t, P, decltype(vc)::value, decltype(kc)::value>; };
      launch_rows<C, V>(L.Q, L.S, vec, pick, [&](auto k, const RowGrid& rg) {
        k<<<rg.blocks, rg.threads, 0, stream>>>(x.data<scalar_t>(), out[0].data<scalar_t>(), out[1].data<C>(), out[2].data<C>(),
                                                L.Q, L.S, L.centered, rg.warp_rows, wp, bp, eps);
        check_launch(op);
      });
    });
  });
}

void run_row_backward(const Tensor& g, const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                      const NormLayout& L, bool batch_stats, const TensorList& out) {
  const Device dev = out[0].device();
  cudaStream_t stream = current_stream(dev);
  LUCID_DISPATCH_FLOATING(x.dtype(), "norm_backward", [&] {
    using C = compute_t<scalar_t>;
    constexpr int V = 16 / sizeof(scalar_t);
    if (L.Q > 0) {
      with_row_params<scalar_t>(weight, Tensor(), x.dtype(), [&](auto* wp, auto*) {
        using P = std::remove_const_t<std::remove_pointer_t<decltype(wp)>>;
        const bool pvec = std::is_same_v<P, scalar_t>;
        const int vec = pick_vec<V>(L.S, {g.data<scalar_t>(), x.data<scalar_t>(), out[0].data<scalar_t>(), pvec ? wp : nullptr});
        auto pick = [](auto vc, auto kc) { return row_backward_kernel<scalar_t, P, decltype(vc)::value, decltype(kc)::value>; };
        launch_rows<C, V>(L.Q, L.S, vec, pick, [&](auto k, const RowGrid& rg) {
          k<<<rg.blocks, rg.threads, 0, stream>>>(g.data<scalar_t>(), x.data<scalar_t>(), mean.data<C>(), rstd.data<C>(), wp,
                                                  L.Q, L.S, L.centered, batch_stats, rg.warp_rows, out[0].data<scalar_t>());
          check_launch("norm_backward");
        });
      });
    }
    if (L.S == 0) return;
    // About 1024 blocks of row chunks (at least 32 rows each); the split depends on the shape only.
    const int64_t tiles = (L.S + kColTile - 1) / kColTile;
    const int64_t nsplit = std::clamp<int64_t>((L.Q + 31) / 32, 1, std::clamp<int64_t>(1024 / tiles, 1, 65535));
    const int64_t qchunk = std::max<int64_t>(1, (L.Q + nsplit - 1) / nsplit);
    const DType cd = nnutil::stat_dtype(x.dtype());
    Tensor parts = Tensor::empty({2 * nsplit * L.S}, cd, dev);  // the weight's partials, then the bias's
    C* pw = parts.data<C>();
    C* pb = pw + nsplit * L.S;
    row_param_kernel<scalar_t><<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(nsplit)), kColTile * kColRows, 0, stream>>>(
        g.data<scalar_t>(), x.data<scalar_t>(), mean.data<C>(), rstd.data<C>(), L.Q, L.S, qchunk, pw, pb);
    check_launch("norm_backward");
    sum_parts_kernel<C><<<blocks_covering(L.S, 256), 256, 0, stream>>>(pw, pb, nsplit, L.S, out[1].data<C>(), out[2].data<C>());
    check_launch("norm_backward");
  });
}

// ---- blocks: group norm, batch norm's backward (a block per q) --------------------------------------
constexpr int kNormThreads = 256;

// Kernel-side copy of a NormLayout.
struct NormGeo {
  int64_t P, Q, S, qmod, qmul, sdiv;
  bool centered;
  __device__ int64_t idx(int64_t q, int64_t s) const { return (q % qmod) * qmul + s / sdiv; }
  // Flat offset of element (p, q, s) of the contiguous [P, Q, S] view.
  __device__ int64_t at(int64_t q, int64_t p, int64_t s) const { return p * Q * S + q * S + s; }
};

NormGeo geo_of(const NormLayout& L) { return {L.P, L.Q, L.S, L.qmod, L.qmul, L.sdiv, L.centered}; }

// Sum of v over the block, returned to every thread.
__device__ inline double block_sum(double v) {
  using BlockReduce = cub::BlockReduce<double, kNormThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ double result;
  double s = BlockReduce(temp).Sum(v);
  if (threadIdx.x == 0) result = s;
  __syncthreads();
  double r = result;
  __syncthreads();
  return r;
}

template <class C>
__device__ inline C param(const double* p, int64_t k, C dflt) {
  return p ? static_cast<C>(p[k]) : dflt;
}

template <class T, class SD>
__global__ void norm_forward_kernel(const T* x, T* y, SD* mean_out, SD* rstd_out, NormGeo L, const double* w,
                                    const double* b, double eps) {
  using C = compute_t<T>;
  const int64_t q = blockIdx.x, count = L.P * L.S;
  const double n = static_cast<double>(count);
  double m = 0;
  if (L.centered) {
    double acc = 0;
    for (int64_t i = threadIdx.x; i < count; i += kNormThreads) acc += static_cast<double>(load(x, L.at(q, i / L.S, i % L.S)));
    m = block_sum(acc) / n;
  }
  double acc = 0;
  for (int64_t i = threadIdx.x; i < count; i += kNormThreads) {
    double d = static_cast<double>(load(x, L.at(q, i / L.S, i % L.S))) - m;
    acc += d * d;
  }
  const double r = 1.0 / sqrt(block_sum(acc) / n + eps);
  if (threadIdx.x == 0) {
    mean_out[q] = static_cast<SD>(m);
    rstd_out[q] = static_cast<SD>(r);
  }
  const C mc = static_cast<C>(m), rc = static_cast<C>(r);
  for (int64_t i = threadIdx.x; i < count; i += kNormThreads) {
    const int64_t s = i % L.S, off = L.at(q, i / L.S, s), k = L.idx(q, s);
    const C wv = param(w, k, C(1)), bv = param(b, k, C(0)), xv = load(x, off);
    store(y, off, (xv - mc) * (rc * wv) + bv);
  }
}


void run_norm_forward(const Tensor& xin, const TensorList& out, const NormLayout& L, const Tensor& weight,
                      const Tensor& bias, double eps, const char* op) {
  LUCID_CHECK(out[0].is_contiguous(), Error, op, ": the output must be contiguous");
  DeviceGuard g(out[0].device());
  if (L.Q == 0) return;
  Tensor x = xin.contiguous_data();
  if (row_path(L)) return run_row_forward(x, out, L, weight, bias, eps, op);
  Tensor w = params_f64(weight), b = params_f64(bias);
  cudaStream_t stream = current_stream(out[0].device());
  LUCID_DISPATCH_FLOATING(x.dtype(), op, [&] {
    auto go = [&](auto* mo, auto* ro) {
      using SD = std::remove_pointer_t<decltype(mo)>;
      norm_forward_kernel<scalar_t, SD><<<static_cast<unsigned>(L.Q), kNormThreads, 0, stream>>>(
          x.data<scalar_t>(), out[0].data<scalar_t>(), mo, ro, geo_of(L), ptr(w), ptr(b), eps);
      check_launch(op);
    };
    if (out[1].dtype() == DType::Float64) go(out[1].data<double>(), out[2].data<double>());
    else go(out[1].data<float>(), out[2].data<float>());
  });
}

void layer_norm_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NormLayout L = nnutil::make_norm_layout(nnutil::kLayer, in[0].shape(), static_cast<int64_t>(a.ints("normalized_shape").size()));
  run_norm_forward(in[0], out, L, in[1], in[2], a.f("eps"), "layer_norm");
}

void rms_norm_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NormLayout L = nnutil::make_norm_layout(nnutil::kRms, in[0].shape(), static_cast<int64_t>(a.ints("normalized_shape").size()));
  run_norm_forward(in[0], out, L, in[1], Tensor(), a.f("eps"), "rms_norm");
}

void group_norm_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  NormLayout L = nnutil::make_norm_layout(nnutil::kGroup, in[0].shape(), a.i("num_groups"));
  run_norm_forward(in[0], out, L, in[1], in[2], a.f("eps"), "group_norm");
}

// ---- NormBackward -------------------------------------------------------------------------------------
// Rows (row_path) run run_row_backward. Otherwise a block per q: the input gradient, and the
// per-channel sums sg = sum g and sgx = sum g * xhat of channel j of q (nch = S / sdiv channels of
// sdiv elements with one parameter each) into part_g / part_gx[q * nch + j].
template <class T, class SD>
__global__ void norm_backward_kernel(const T* g, const T* x, const SD* mean, const SD* rstd, const double* w, NormGeo L,
                                     bool batch_stats, T* gx, double* part_g, double* part_gx) {
  using C = compute_t<T>;
  const int64_t q = blockIdx.x, count = L.P * L.S;
  const double n = static_cast<double>(count);
  const double m = static_cast<double>(mean[q]), r = static_cast<double>(rstd[q]);
  double sum_gw = 0, sum_gwxh = 0;
  const int64_t nch = L.S / L.sdiv, width = L.P * L.sdiv;
  for (int64_t j = 0; j < nch; ++j) {
    double a0 = 0, a1 = 0;
    for (int64_t i = threadIdx.x; i < width; i += kNormThreads) {
      const int64_t off = L.at(q, i / L.sdiv, j * L.sdiv + i % L.sdiv);
      double gv = static_cast<double>(load(g, off));
      a0 += gv;
      a1 += gv * (static_cast<double>(load(x, off)) - m) * r;
    }
    const double sg = block_sum(a0), sgx = block_sum(a1);
    const double wk = static_cast<double>(param(w, L.idx(q, j * L.sdiv), C(1)));
    if (threadIdx.x == 0) {
      part_g[q * nch + j] = sg;
      part_gx[q * nch + j] = sgx;
    }
    sum_gw += wk * sg;
    sum_gwxh += wk * sgx;
  }
  const C rc = static_cast<C>(r), mc = static_cast<C>(m);
  const C ac = batch_stats && L.centered ? static_cast<C>(sum_gw / n) : C(0);
  const C bco = batch_stats ? static_cast<C>(sum_gwxh / n) : C(0);
  for (int64_t i = threadIdx.x; i < count; i += kNormThreads) {
    const int64_t s = i % L.S, off = L.at(q, i / L.S, s);
    const C xh = (load(x, off) - mc) * rc;
    store(gx, off, rc * (load(g, off) * param(w, L.idx(q, s), C(1)) - ac - xh * bco));
  }
}

// Parameter k = (q % qmod) * qmul + j sums the channel sums of j = k % qmul over q = k / qmul,
// + qmod, ...
template <class SD>
__global__ void sum_channels_kernel(const double* part_g, const double* part_gx, NormGeo L, int64_t nch, int64_t W, SD* gw,
                                    SD* gb) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= W) return;
  double sw = 0, sb = 0;
  if (nch > 0 && L.qmul > 0) {
    const int64_t j = k % L.qmul;
    for (int64_t q = k / L.qmul; q < L.Q; q += L.qmod) { sw += part_gx[q * nch + j]; sb += part_g[q * nch + j]; }
  }
  gw[k] = static_cast<SD>(sw);
  gb[k] = static_cast<SD>(sb);
}

void norm_backward_host(const TensorList& in, const TensorList& out, const Attrs& a) {
  if (a.i("kind") == nnutil::kBatch && a.b("batch_stats") &&
      cudnn_batch_norm_backward(in[0], in[1], in[2], in[3], in[4], out[0], out[1], out[2]))
    return;
  NormLayout L = nnutil::make_norm_layout(a.i("kind"), in[1].shape(), a.i("k"));
  for (const Tensor& o : out) LUCID_CHECK(o.is_contiguous(), Error, "norm_backward: the outputs must be contiguous");
  const Device dev = out[0].device();
  DeviceGuard dg(dev);
  DType xt = in[1].dtype(), sd = nnutil::stat_dtype(xt);
  Tensor g = contiguous_as(in[0], xt), x = in[1].contiguous_data();
  Tensor mean = contiguous_as(in[2], sd), rstd = contiguous_as(in[3], sd);
  const bool bs = a.b("batch_stats");
  if (row_path(L)) return run_row_backward(g, x, mean, rstd, in[4], L, bs, out);
  Tensor w = params_f64(in[4]);
  const NormGeo geo = geo_of(L);
  const int64_t nch = L.S / L.sdiv;
  cudaStream_t stream = current_stream(dev);
  Tensor part_g = Tensor::empty({std::max<int64_t>(1, L.Q * nch)}, DType::Float64, dev);
  Tensor part_gx = Tensor::empty({std::max<int64_t>(1, L.Q * nch)}, DType::Float64, dev);
  LUCID_DISPATCH_FLOATING(xt, "norm_backward", [&] {
    auto go = [&](auto* mp, auto* rp, auto* gwp, auto* gbp) {
      using SD = std::remove_pointer_t<decltype(gwp)>;
      if (L.Q > 0) {
        norm_backward_kernel<scalar_t, SD><<<static_cast<unsigned>(L.Q), kNormThreads, 0, stream>>>(
            g.data<scalar_t>(), x.data<scalar_t>(), mp, rp, ptr(w), geo, bs, out[0].data<scalar_t>(),
            part_g.data<double>(), part_gx.data<double>());
        check_launch("norm_backward");
      }
      if (L.W == 0) return;
      sum_channels_kernel<SD><<<blocks_covering(L.W, 256), 256, 0, stream>>>(part_g.data<double>(), part_gx.data<double>(), geo, nch,
                                                                      L.W, gwp, gbp);
      check_launch("norm_backward");
    };
    if (sd == DType::Float64)
      go(mean.data<double>(), rstd.data<double>(), out[1].data<double>(), out[2].data<double>());
    else
      go(mean.data<float>(), rstd.data<float>(), out[1].data<float>(), out[2].data<float>());
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(LayerNorm, CUDA, layer_norm_kernel);
LUCID_REGISTER_KERNEL(RmsNorm, CUDA, rms_norm_kernel);
LUCID_REGISTER_KERNEL(GroupNorm, CUDA, group_norm_kernel);
LUCID_REGISTER_KERNEL(NormBackward, CUDA, norm_backward_host);

}  // namespace lucid::cuda
