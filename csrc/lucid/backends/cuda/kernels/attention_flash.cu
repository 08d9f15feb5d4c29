// Flash kernels (FlashAttention-2 style) of ScaledDotProductAttention and SdpaBackward for
// float32, float16 and bfloat16 (float compute) with head dims E, Ev <= 128; the registered kernels
// in attention.cu call them first and take the GEMM path for the rest (attention.cuh). The (B, L, S)
// probabilities are never stored: the forward keeps the row statistic lse and the backward
// recomputes P = exp(score - lse) tile by tile.
//   forward: a block per (query tile of 64 rows, batch); it loops over key tiles of 64 (causal:
//            only the tiles at or left of the diagonal), S = scale q k^T with the masks of
//            attention.cuh, an online softmax (running max and sum per row), the dropout keep-mask
//            multiplying P after the softmax, out accumulated in float; writes out and lse (+inf
//            for a fully masked row, whose out is zeros).
//   backward: delta = rowsum(g * out); a block per (key tile, batch) loops over query tiles and
//            accumulates dk and dv; a block per (query tile, batch) loops over key tiles for dq
//            and writes dscores (the gradient of a float mask) when it is asked for. Two kernels,
//            no atomics: the results are deterministic.
// Tiles live in shared memory as float rows padded by 4 (row stride EB + 4, EB = 64 or 128, the
// head-dim bound of the instantiation), so the float4 reads of 8 lanes hit 32 distinct banks; a
// block is 16 x 16 threads, each computing a 4 x 4 micro-tile of a 64 x 64 score tile (rows ty +
// 16 i, columns tx + 16 j) and 4 x (EB / 16) outputs (rows ty + 16 i, columns 4 tx + 64 jj + u)
// with FFMA. A tile that needs no masking (flash_interior) skips the per-element mask tests; the
// exponentials are __expf (the same in the forward and the backward's recomputation).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "lucid/backends/cuda/kernels/attention.cuh"

namespace lucid::cuda {

namespace {

constexpr int kTile = 64;                // query and key rows of a tile
constexpr int kFlashThreads = 256;       // 16 x 16
constexpr int kPLd = kTile + 4;          // row stride of the P / dS tiles in shared memory

template <class D>
struct FlashArgs {
  const D *q, *k, *v;  // (B, L, E), (B, S, E), (B, S, Ev), contiguous
  const D *g, *o;      // backward: the output's gradient and the output, (B, L, Ev)
  D *out, *dq, *dk, *dv;
  D* ds;               // dscores (B, L, S), or null
  float* lse;          // (B, L): forward output, backward input
  float* delta;        // (B, L): backward rowsum(g * out)
  MaskView<D> mask, drop;
  int64_t B, L, S;
  int E, Ev, E4, Ev4;  // head dims and their multiples of 4 (the padded tile widths)
  float scale, dscale;
  bool causal;
  bool vec;            // rows load 4 elements at a time (E, Ev multiples of 4, bases aligned to 4 elements)
};

__device__ __forceinline__ float comp(const float4& v, int k) { return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w; }

// Rows [0, 64) of a tile of `cols` columns from src (row-major, rows of `cols` elements) into dst
// (row stride LD floats) as float: rows at or past `valid` and columns [cols, cols4) are zeros.
template <class D, int LD>
__device__ __forceinline__ void load_tile(float* dst, const D* src, int valid, int cols, int cols4, bool vec) {
  const int n4 = cols4 >> 2;
  for (int idx = threadIdx.x; idx < kTile * n4; idx += kFlashThreads) {
    const int r = idx / n4, c = (idx - r * n4) << 2;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r < valid) {
      const D* p = src + static_cast<int64_t>(r) * cols + c;
      if (vec) {
        if constexpr (std::is_same_v<D, float>) {
          v = *reinterpret_cast<const float4*>(p);
        } else {  // four 16-bit floats in one 8-byte load
          const uint2 raw = *reinterpret_cast<const uint2*>(p);
          D h[4];
          memcpy(h, &raw, sizeof raw);
          v = make_float4(to_compute(h[0]), to_compute(h[1]), to_compute(h[2]), to_compute(h[3]));
        }
      } else {
        v.x = to_compute(p[0]);  // c < cols: cols4 rounds cols up to a multiple of 4
        v.y = c + 1 < cols ? to_compute(p[1]) : 0.f;
        v.z = c + 2 < cols ? to_compute(p[2]) : 0.f;
        v.w = c + 3 < cols ? to_compute(p[3]) : 0.f;
      }
    }
    *reinterpret_cast<float4*>(dst + r * LD + c) = v;
  }
}

// acc[i][j] += sum_{e < n} A[(ty + 16 i) * LD + e] * B[(tx + 16 j) * LD + e] (n a multiple of 4).
template <int LD>
__device__ __forceinline__ void tile_dot(float (&acc)[4][4], const float* A, const float* B, int n, int ty, int tx) {
#pragma unroll 2
  for (int e = 0; e < n; e += 4) {
    float4 x[4], y[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) x[i] = *reinterpret_cast<const float4*>(A + (ty + 16 * i) * LD + e);
#pragma unroll
    for (int j = 0; j < 4; ++j) y[j] = *reinterpret_cast<const float4*>(B + (tx + 16 * j) * LD + e);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float t = fmaf(x[i].x, y[j].x, acc[i][j]);
        t = fmaf(x[i].y, y[j].y, t);
        t = fmaf(x[i].z, y[j].z, t);
        acc[i][j] = fmaf(x[i].w, y[j].w, t);
      }
  }
}

// o[i][jj][u] += sum_{c < 64} P[(ty + 16 i) * kPLd + c] * V[c * LD + 4 tx + 64 jj + u].
template <int LD, int NJ>
__device__ __forceinline__ void tile_pv(float (&o)[4][NJ][4], const float* P, const float* V, int ty, int tx) {
#pragma unroll 2
  for (int c = 0; c < kTile; c += 4) {
    float4 p[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) p[i] = *reinterpret_cast<const float4*>(P + (ty + 16 * i) * kPLd + c);
#pragma unroll
    for (int cc = 0; cc < 4; ++cc)
#pragma unroll
      for (int jj = 0; jj < NJ; ++jj) {
        const float4 v = *reinterpret_cast<const float4*>(V + (c + cc) * LD + 4 * tx + 64 * jj);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float pv = comp(p[i], cc);
          o[i][jj][0] = fmaf(pv, v.x, o[i][jj][0]);
          o[i][jj][1] = fmaf(pv, v.y, o[i][jj][1]);
          o[i][jj][2] = fmaf(pv, v.z, o[i][jj][2]);
          o[i][jj][3] = fmaf(pv, v.w, o[i][jj][3]);
        }
      }
  }
}

// The larger of x and y, NaN when either is (a NaN score makes its row NaN, as on the CPU).
__device__ __forceinline__ float nan_max(float x, float y) { return (x > y || x != x) ? x : y; }

// Max / sum over the 16 lanes of a half-warp (the threads of one score row).
__device__ __forceinline__ float row_max16(float v) {
  for (int o = 8; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float row_sum16(float v) {
  for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The masked, scaled score of query l and key s (-inf outside the (L, S) problem).
template <class D>
__device__ __forceinline__ float flash_score(const FlashArgs<D>& a, float dot, int64_t b, int64_t l, int64_t s) {
  if (l >= a.L) return -INFINITY;
  const int64_t lim = a.causal ? (a.S < l + 1 ? a.S : l + 1) : a.S;
  return masked_score<D>(dot * a.scale, b * a.L + l, s, a.S, lim, a.mask);
}

// Whether the 64 x 64 tile of queries [q0, q0 + 64) and keys [s0, s0 + 64) needs no masking: no
// mask, every row and column inside the problem, and (causal) every key at or left of every row.
template <class D>
__device__ __forceinline__ bool flash_interior(const FlashArgs<D>& a, int64_t q0, int64_t s0) {
  return !a.mask.kind && q0 + kTile <= a.L && s0 + kTile <= a.S && (!a.causal || s0 + kTile - 1 <= q0);
}

// The dropout multiplier of (l, s) (1 without dropout or outside the problem).
template <class D>
__device__ __forceinline__ float flash_drop(const FlashArgs<D>& a, int64_t b, int64_t l, int64_t s) {
  if (!a.drop.kind || l >= a.L || s >= a.S) return 1.f;
  return drop_mult(a.drop, (b * a.L + l) * a.S + s, a.dscale);
}

// The backward's two products of a tile: st = A B^T over n1 (the scores) and dp = C D^T over n2
// (dP), rows ty + 16 i and columns tx + 16 j.
template <int LD>
__device__ __forceinline__ void score_and_dp(float (&st)[4][4], float (&dp)[4][4], const float* A, const float* B, int n1,
                                             const float* C, const float* Dm, int n2, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) st[i][j] = dp[i][j] = 0.f;
  tile_dot<LD>(st, A, B, n1, ty, tx);
  tile_dot<LD>(dp, C, Dm, n2, ty, tx);
}

// The backward's P * dropout multiplier (pd) and dS = P (dP m - delta) of query l and key s, from
// the raw dot product st, dP = dp, and the row's lse and delta (P recomputed as exp(score - lse)).
template <class D>
__device__ __forceinline__ void recompute(const FlashArgs<D>& a, bool interior, int64_t b, int64_t l, int64_t s, float st, float dp,
                                          float lse, float delta, float& pd, float& ds) {
  const float p = __expf((interior ? st * a.scale : flash_score(a, st, b, l, s)) - lse);
  const float dm = flash_drop(a, b, l, s);
  pd = p * dm;
  ds = p * (dp * dm - delta);
}

// Stores acc * mult of rows [r0, r0 + 64) (valid ones) and columns 4 tx + 64 jj + u (< cols) of dst
// (rows of `cols` elements).
template <class D, int NJ>
__device__ __forceinline__ void store_rows(D* dst, const float (&acc)[4][NJ][4], const float (&mult)[4], int valid, int cols,
                                           int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = ty + 16 * i;
    if (r >= valid) continue;
#pragma unroll
    for (int jj = 0; jj < NJ; ++jj)
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int c = 4 * tx + 64 * jj + u;
        if (c < cols) dst[static_cast<int64_t>(r) * cols + c] = from_compute<D>(acc[i][jj][u] * mult[i]);
      }
  }
}

// The batch b and first row q0 of this block's query tile (the longest causal rows first: the
// last tiles of every batch are the first blocks); returns the tile's rows inside the problem.
template <class D>
__device__ __forceinline__ int query_tile(const FlashArgs<D>& a, int64_t& b, int64_t& q0) {
  const int64_t nq = (a.L + kTile - 1) / kTile, bid = blockIdx.x;
  b = bid % a.B;
  q0 = (nq - 1 - bid / a.B) * kTile;
  return static_cast<int>(a.L - q0 < kTile ? a.L - q0 : kTile);
}

template <class D, int EB>
__global__ void __launch_bounds__(kFlashThreads, EB == 64 ? 2 : 1) flash_forward_kernel(FlashArgs<D> a) {
  constexpr int LD = EB + 4, NJ = EB / 64;
  extern __shared__ float4 smem4[];
  float* Qs = reinterpret_cast<float*>(smem4);
  float* Ks = Qs + kTile * LD;
  float* Vs = Ks + kTile * LD;
  float* Ps = Vs + kTile * LD;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  int64_t b, q0;
  const int qv = query_tile(a, b, q0);
  load_tile<D, LD>(Qs, a.q + (b * a.L + q0) * a.E, qv, a.E, a.E4, a.vec);
  float m[4], lsum[4], o[4][NJ][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = -INFINITY;
    lsum[i] = 0.f;
#pragma unroll
    for (int jj = 0; jj < NJ; ++jj)
#pragma unroll
      for (int u = 0; u < 4; ++u) o[i][jj][u] = 0.f;
  }
  const int64_t kv_end = a.causal ? (a.S < q0 + qv ? a.S : q0 + qv) : a.S;  // causal: keys s <= the last row
  for (int64_t s0 = 0; s0 < kv_end; s0 += kTile) {
    const int kvv = static_cast<int>(a.S - s0 < kTile ? a.S - s0 : kTile);
    __syncthreads();  // the previous tile's Ks, Vs, Ps are read
    load_tile<D, LD>(Ks, a.k + (b * a.S + s0) * a.E, kvv, a.E, a.E4, a.vec);
    load_tile<D, LD>(Vs, a.v + (b * a.S + s0) * a.Ev, kvv, a.Ev, a.Ev4, a.vec);
    __syncthreads();
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
    tile_dot<LD>(acc, Qs, Ks, a.E4, ty, tx);
    const bool interior = flash_interior(a, q0, s0);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int64_t l = q0 + ty + 16 * i;
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        acc[i][j] = interior ? acc[i][j] * a.scale : flash_score(a, acc[i][j], b, l, s0 + tx + 16 * j);
        mx = nan_max(mx, acc[i][j]);
      }
      const float mnew = nan_max(m[i], row_max16(mx));
      const float mu = mnew == -INFINITY ? 0.f : mnew;  // a row masked so far: its exps are all 0
      const float alpha = __expf(m[i] - mu);
      float rs = 0.f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t s = s0 + tx + 16 * j;
        const float p = __expf(acc[i][j] - mu);
        rs += p;
        Ps[(ty + 16 * i) * kPLd + tx + 16 * j] = p * flash_drop(a, b, l, s);
      }
      lsum[i] = lsum[i] * alpha + row_sum16(rs);
      m[i] = mnew;
#pragma unroll
      for (int jj = 0; jj < NJ; ++jj)
#pragma unroll
        for (int u = 0; u < 4; ++u) o[i][jj][u] *= alpha;
    }
    __syncthreads();
    tile_pv<LD, NJ>(o, Ps, Vs, ty, tx);
  }
  float inv[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const bool empty = m[i] == -INFINITY;  // fully masked: zeros, and lse +inf
    inv[i] = empty ? 0.f : 1.f / lsum[i];
    const int64_t l = q0 + ty + 16 * i;
    if (tx == 0 && l < a.L) a.lse[b * a.L + l] = empty ? INFINITY : m[i] + logf(lsum[i]);
  }
  store_rows<D, NJ>(a.out + (b * a.L + q0) * a.Ev, o, inv, qv, a.Ev, ty, tx);
}

// delta[row] = sum_d g[row, d] * out[row, d], a warp per row.
template <class D>
__global__ void flash_delta_kernel(const D* g, const D* o, float* delta, int64_t rows, int Ev) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (kFlashThreads / 32) + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int lane = threadIdx.x & 31;
  float acc = 0.f;
  for (int d = lane; d < Ev; d += 32) acc = fmaf(to_compute(g[row * Ev + d]), to_compute(o[row * Ev + d]), acc);
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (lane == 0) delta[row] = acc;
}

// dk and dv of a key tile: rows of the score tiles are keys (ty + 16 i), columns queries (tx + 16 j).
template <class D, int EB>
__global__ void __launch_bounds__(kFlashThreads, EB == 64 ? 2 : 1) flash_dkdv_kernel(FlashArgs<D> a) {
  constexpr int LD = EB + 4, NJ = EB / 64;
  extern __shared__ float4 smem4[];
  float* Ks = reinterpret_cast<float*>(smem4);
  float* Vs = Ks + kTile * LD;
  float* Qs = Vs + kTile * LD;
  float* dOs = Qs + kTile * LD;
  float* PdT = dOs + kTile * LD;  // (P m)^T: [key][query]
  float* dST = PdT + kTile * kPLd;  // dS^T
  float* lse_s = dST + kTile * kPLd;
  float* delta_s = lse_s + kTile;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  const int64_t bid = blockIdx.x;
  const int64_t b = bid % a.B, s0 = (bid / a.B) * kTile;  // causal: the first key tiles see the most rows
  const int kvv = static_cast<int>(a.S - s0 < kTile ? a.S - s0 : kTile);
  load_tile<D, LD>(Ks, a.k + (b * a.S + s0) * a.E, kvv, a.E, a.E4, a.vec);
  load_tile<D, LD>(Vs, a.v + (b * a.S + s0) * a.Ev, kvv, a.Ev, a.Ev4, a.vec);
  float dk[4][NJ][4], dv[4][NJ][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int jj = 0; jj < NJ; ++jj)
#pragma unroll
      for (int u = 0; u < 4; ++u) dk[i][jj][u] = dv[i][jj][u] = 0.f;
  for (int64_t q0 = a.causal ? s0 : 0; q0 < a.L; q0 += kTile) {  // causal: rows l >= s0 only
    const int qv = static_cast<int>(a.L - q0 < kTile ? a.L - q0 : kTile);
    __syncthreads();  // the previous tile's Qs, dOs, PdT, dST are read
    load_tile<D, LD>(Qs, a.q + (b * a.L + q0) * a.E, qv, a.E, a.E4, a.vec);
    load_tile<D, LD>(dOs, a.g + (b * a.L + q0) * a.Ev, qv, a.Ev, a.Ev4, a.vec);
    if (threadIdx.x < kTile) {
      const int r = threadIdx.x;
      lse_s[r] = r < qv ? a.lse[b * a.L + q0 + r] : INFINITY;
      delta_s[r] = r < qv ? a.delta[b * a.L + q0 + r] : 0.f;
    }
    __syncthreads();
    float st[4][4], dpt[4][4];
    score_and_dp<LD>(st, dpt, Ks, Qs, a.E4, Vs, dOs, a.Ev4, ty, tx);
    const bool interior = flash_interior(a, q0, s0);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int r = tx + 16 * j, t = (ty + 16 * i) * kPLd + r;
        recompute(a, interior, b, q0 + r, s0 + ty + 16 * i, st[i][j], dpt[i][j], lse_s[r], delta_s[r], PdT[t], dST[t]);
      }
    __syncthreads();
    tile_pv<LD, NJ>(dv, PdT, dOs, ty, tx);
    tile_pv<LD, NJ>(dk, dST, Qs, ty, tx);
  }
  const float one[4] = {1.f, 1.f, 1.f, 1.f}, scl[4] = {a.scale, a.scale, a.scale, a.scale};
  store_rows<D, NJ>(a.dk + (b * a.S + s0) * a.E, dk, scl, kvv, a.E, ty, tx);
  store_rows<D, NJ>(a.dv + (b * a.S + s0) * a.Ev, dv, one, kvv, a.Ev, ty, tx);
}

// dq (and dscores) of a query tile: rows of the score tiles are queries, columns keys.
template <class D, int EB>
__global__ void __launch_bounds__(kFlashThreads, EB == 64 ? 2 : 1) flash_dq_kernel(FlashArgs<D> a) {
  constexpr int LD = EB + 4, NJ = EB / 64;
  extern __shared__ float4 smem4[];
  float* Qs = reinterpret_cast<float*>(smem4);
  float* dOs = Qs + kTile * LD;
  float* Ks = dOs + kTile * LD;
  float* Vs = Ks + kTile * LD;
  float* dSs = Vs + kTile * LD;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  int64_t b, q0;
  const int qv = query_tile(a, b, q0);
  load_tile<D, LD>(Qs, a.q + (b * a.L + q0) * a.E, qv, a.E, a.E4, a.vec);
  load_tile<D, LD>(dOs, a.g + (b * a.L + q0) * a.Ev, qv, a.Ev, a.Ev4, a.vec);
  float lse[4], delta[4], dq[4][NJ][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t l = q0 + ty + 16 * i;
    lse[i] = l < a.L ? a.lse[b * a.L + l] : INFINITY;
    delta[i] = l < a.L ? a.delta[b * a.L + l] : 0.f;
#pragma unroll
    for (int jj = 0; jj < NJ; ++jj)
#pragma unroll
      for (int u = 0; u < 4; ++u) dq[i][jj][u] = 0.f;
  }
  // causal: keys s <= the last row (every tile when dscores is written, so all of it is)
  const int64_t kv_end = (a.causal && !a.ds) ? (a.S < q0 + qv ? a.S : q0 + qv) : a.S;
  for (int64_t s0 = 0; s0 < kv_end; s0 += kTile) {
    const int kvv = static_cast<int>(a.S - s0 < kTile ? a.S - s0 : kTile);
    __syncthreads();  // the previous tile's Ks, Vs, dSs are read
    load_tile<D, LD>(Ks, a.k + (b * a.S + s0) * a.E, kvv, a.E, a.E4, a.vec);
    load_tile<D, LD>(Vs, a.v + (b * a.S + s0) * a.Ev, kvv, a.Ev, a.Ev4, a.vec);
    __syncthreads();
    float st[4][4], dp[4][4];
    score_and_dp<LD>(st, dp, Qs, Ks, a.E4, dOs, Vs, a.Ev4, ty, tx);
    const bool interior = flash_interior(a, q0, s0);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t l = q0 + ty + 16 * i, s = s0 + tx + 16 * j;
        float pd, dsv;
        recompute(a, interior, b, l, s, st[i][j], dp[i][j], lse[i], delta[i], pd, dsv);
        dSs[(ty + 16 * i) * kPLd + tx + 16 * j] = dsv;
        if (a.ds && l < a.L && s < a.S) a.ds[(b * a.L + l) * a.S + s] = from_compute<D>(dsv);
      }
    __syncthreads();
    tile_pv<LD, NJ>(dq, dSs, Ks, ty, tx);
  }
  const float scl[4] = {a.scale, a.scale, a.scale, a.scale};
  store_rows<D, NJ>(a.dq + (b * a.L + q0) * a.E, dq, scl, qv, a.E, ty, tx);
}

constexpr size_t fwd_smem(int eb) { return (3 * kTile * (eb + 4) + kTile * kPLd) * sizeof(float); }
constexpr size_t dkdv_smem(int eb) { return (4 * kTile * (eb + 4) + 2 * kTile * kPLd + 2 * kTile) * sizeof(float); }
constexpr size_t dq_smem(int eb) { return (4 * kTile * (eb + 4) + kTile * kPLd) * sizeof(float); }

template <class K, class A>
void launch(K kernel, int64_t blocks, size_t smem, cudaStream_t s, const char* what, const A& args) {
  if (blocks == 0) return;
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)), what);
  kernel<<<static_cast<unsigned>(blocks), kFlashThreads, smem, s>>>(args);
  check_launch(what);
}

bool flash_covers(DType dt, int64_t E, int64_t Ev, int64_t B, int64_t L, int64_t S) {
  if (dt != DType::Float32 && dt != DType::Float16 && dt != DType::BFloat16) return false;
  const int64_t tiles = (std::max(L, S) + kTile - 1) / kTile;
  return E <= 128 && Ev <= 128 && B * tiles < (int64_t{1} << 31);
}

template <class D>
bool aligned4(const D* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % (4 * sizeof(D)) == 0; }

// The arguments shared by the kernels (contiguous q, k, v already in the tensors given).
template <class D>
FlashArgs<D> flash_args(const Tensor& q, const Tensor& k, const Tensor& v, const Attrs& a) {
  FlashArgs<D> f{};
  f.q = q.data<D>(), f.k = k.data<D>(), f.v = v.data<D>();
  f.B = q.shape()[0], f.L = q.shape()[1], f.S = k.shape()[1];
  f.E = static_cast<int>(q.shape()[2]), f.Ev = static_cast<int>(v.shape()[2]);
  f.E4 = (f.E + 3) / 4 * 4, f.Ev4 = (f.Ev + 3) / 4 * 4;
  f.scale = static_cast<float>(a.f("scale"));
  f.causal = a.b("is_causal");
  return f;
}

template <class D>
void set_vec(FlashArgs<D>& f) {
  f.vec = f.E % 4 == 0 && f.Ev % 4 == 0 && aligned4(f.q) && aligned4(f.k) && aligned4(f.v) && aligned4(f.g) && aligned4(f.o);
}

template <class D>
void flash_forward(const TensorList& in, const TensorList& out, const Attrs& a) {
  const DType dt = in[0].dtype();
  cudaStream_t s = current_stream(out[0].device());
  Tensor q = in[0].contiguous_data(), k = in[1].contiguous_data(), v = in[2].contiguous_data(), mk, dk;
  FlashArgs<D> f = flash_args<D>(q, k, v, a);
  f.mask = mask_view<D>(in[3], dt, mk);
  f.drop = mask_view<D>(in[4], dt, dk);
  f.dscale = dropout_scale<float>(f.drop.kind, a.f("dropout_p"));
  f.out = out[0].data<D>();
  f.lse = out[1].data<float>();
  set_vec(f);
  const int64_t blocks = f.B * ((f.L + kTile - 1) / kTile);
  if (std::max(f.E, f.Ev) <= 64) launch(flash_forward_kernel<D, 64>, blocks, fwd_smem(64), s, "scaled_dot_product_attention (flash)", f);
  else launch(flash_forward_kernel<D, 128>, blocks, fwd_smem(128), s, "scaled_dot_product_attention (flash)", f);
}

template <class D>
void flash_backward(const TensorList& in, const TensorList& out, const Attrs& a) {
  const DType dt = in[1].dtype();
  const Device dev = out[0].device();
  cudaStream_t s = current_stream(dev);
  Tensor q = in[1].contiguous_data(), k = in[2].contiguous_data(), v = in[3].contiguous_data(), mk, dk;
  Tensor g = contig_as(in[0], dt), o = contig_as(in[6], dt), lse = in[7].contiguous_data();
  FlashArgs<D> f = flash_args<D>(q, k, v, a);
  f.mask = mask_view<D>(in[4], dt, mk);
  f.drop = mask_view<D>(in[5], dt, dk);
  f.dscale = dropout_scale<float>(f.drop.kind, a.f("dropout_p"));
  f.g = g.data<D>(), f.o = o.data<D>();
  f.lse = lse.data<float>();
  Tensor delta = Tensor::empty(Shape{f.B, f.L}, DType::Float32, dev);
  f.delta = delta.data<float>();
  f.dq = out[0].data<D>(), f.dk = out[1].data<D>(), f.dv = out[2].data<D>();
  f.ds = out[3].numel() ? out[3].data<D>() : nullptr;
  set_vec(f);
  const int64_t rows = f.B * f.L;
  if (rows > 0) {
    flash_delta_kernel<D><<<static_cast<unsigned>((rows + 7) / 8), kFlashThreads, 0, s>>>(f.g, f.o, f.delta, rows, f.Ev);
    check_launch("scaled_dot_product_attention_backward (delta)");
  }
  const int64_t kblocks = f.B * ((f.S + kTile - 1) / kTile), qblocks = f.B * ((f.L + kTile - 1) / kTile);
  if (std::max(f.E, f.Ev) <= 64) {
    launch(flash_dkdv_kernel<D, 64>, kblocks, dkdv_smem(64), s, "scaled_dot_product_attention_backward (flash dk, dv)", f);
    launch(flash_dq_kernel<D, 64>, qblocks, dq_smem(64), s, "scaled_dot_product_attention_backward (flash dq)", f);
  } else {
    launch(flash_dkdv_kernel<D, 128>, kblocks, dkdv_smem(128), s, "scaled_dot_product_attention_backward (flash dk, dv)", f);
    launch(flash_dq_kernel<D, 128>, qblocks, dq_smem(128), s, "scaled_dot_product_attention_backward (flash dq)", f);
  }
}

// fn(an element of the device type) for the dtypes and shapes the flash kernels cover; false otherwise.
template <class Fn>
bool flash_dispatch(const Tensor& q, const Tensor& k, const Tensor& v, Fn&& fn) {
  if (!flash_covers(q.dtype(), q.shape()[2], v.shape()[2], q.shape()[0], q.shape()[1], k.shape()[1])) return false;
  switch (q.dtype()) {
    case DType::Float16: fn(__half{}); break;
    case DType::BFloat16: fn(__nv_bfloat16{}); break;
    default: fn(float{}); break;
  }
  return true;
}

}  // namespace

bool sdpa_flash_forward(const TensorList& in, const TensorList& out, const Attrs& a) {
  return flash_dispatch(in[0], in[1], in[2], [&](auto x) { flash_forward<decltype(x)>(in, out, a); });
}

bool sdpa_flash_backward(const TensorList& in, const TensorList& out, const Attrs& a) {
  return flash_dispatch(in[1], in[2], in[3], [&](auto x) { flash_backward<decltype(x)>(in, out, a); });
}

}  // namespace lucid::cuda
