// CUDA kernels of ScaledDotProductAttention and SdpaBackward (op records in ops/nn_attention.cpp).
// The registered kernels take the flash kernels of attention_flash.cu (float32/16-bit, head dims
// up to 128: P is never stored) and otherwise this file's GEMM path, the CPU kernel's math
// (backends/cpu/kernels/attention.cpp) in the compute type (float for 16-bit and float32, double
// for float64), built from batched cuBLASLt GEMMs (float32 follows the float32 matmul precision,
// full FP32 by default) and row kernels:
//   forward:  scores = scale q k^T; masked stable softmax per row (causal: s > l masked; bool
//             mask: False masked; float mask added; a fully masked row gives zeros and lse +inf)
//             -> the lse output; out = (P * dropout multiplier) v;
//   backward: P = exp(masked scores - lse) recomputed; dP = g v^T; dv = (P m)^T g; dS = P (dP m -
//             rowsum(P dP m)) -> the dscores output when asked; dq = scale dS k; dk = scale dS^T q.
// The GEMM path materialises (B, L, S) scores; it serves float64 and the large head dims.
#include <type_traits>

#include "lucid/backends/cuda/cublaslt.h"
#include "lucid/backends/cuda/kernels/attention.cuh"
#include "lucid/ops/op_def.h"

namespace lucid::cuda {

namespace {

constexpr int kTile = 16;

// Batched C[b] (M x N) = alpha * op(A[b]) (M x K) * op(B[b]) (K x N), row-major, leading
// dimensions lda/ldb/ldc; op(A)(m, k) = ta ? A[k * lda + m] : A[m * lda + k], likewise B.
template <class C>
__global__ void gemm_kernel(const C* A, const C* B, C* Cm, int64_t batch, int64_t M, int64_t N, int64_t K, int64_t lda,
                            int64_t ldb, int64_t ldc, int64_t sa, int64_t sb, int64_t sc, bool ta, bool tb, C alpha) {
  __shared__ C as[kTile][kTile + 1];
  __shared__ C bs[kTile][kTile + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  int64_t m = static_cast<int64_t>(blockIdx.y) * kTile + ty, n = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    const C* Ab = A + b * sa;
    const C* Bb = B + b * sb;
    C acc = 0;
    for (int64_t k0 = 0; k0 < K; k0 += kTile) {
      int64_t ka = k0 + tx, kb = k0 + ty;
      int64_t am = static_cast<int64_t>(blockIdx.y) * kTile + ty, bn = static_cast<int64_t>(blockIdx.x) * kTile + tx;
      as[ty][tx] = (am < M && ka < K) ? (ta ? Ab[ka * lda + am] : Ab[am * lda + ka]) : C(0);
      bs[ty][tx] = (kb < K && bn < N) ? (tb ? Bb[bn * ldb + kb] : Bb[kb * ldb + bn]) : C(0);
      __syncthreads();
      for (int kk = 0; kk < kTile; ++kk) acc += as[ty][kk] * bs[kk][tx];
      __syncthreads();
    }
    if (m < M && n < N) Cm[b * sc + m * ldc + n] = alpha * acc;
  }
}

// The products go to cuBLASLt (cublaslt.h, column-major: row-major C = op(A) op(B) is C^T =
// op(B)^T op(A)^T, so B is its A and A its B); the tiled kernel above only serves K = 0 (zeros)
// and a problem cuBLASLt has no algorithm for.
template <class C>
void gemm(cudaStream_t s, const C* A, const C* B, C* Cm, int64_t batch, int64_t M, int64_t N, int64_t K, int64_t lda,
          int64_t ldb, int64_t ldc, int64_t sa, int64_t sb, int64_t sc, bool ta, bool tb, C alpha) {
  if (batch == 0 || M == 0 || N == 0) return;
  if (K > 0) {
    int index = 0;
    check_cuda(cudaGetDevice(&index), "cudaGetDevice");
    LtGemm g;
    g.dtype = std::is_same_v<C, double> ? DType::Float64 : DType::Float32;
    g.m = N, g.n = M, g.k = K, g.batch = batch;
    g.a = B, g.lda = ldb, g.stride_a = sb, g.trans_a = tb;
    g.b = A, g.ldb = lda, g.stride_b = sa, g.trans_b = ta;
    g.d = Cm, g.ldd = ldc, g.stride_d = sc;
    g.alpha = static_cast<double>(alpha);
    if (lt_matmul(g, Device{DeviceType::CUDA, static_cast<int16_t>(index)})) return;
  }
  dim3 block(kTile, kTile);
  dim3 grid(static_cast<unsigned>((N + kTile - 1) / kTile), static_cast<unsigned>((M + kTile - 1) / kTile),
            static_cast<unsigned>(batch < 65535 ? batch : 65535));
  gemm_kernel<C><<<grid, block, 0, s>>>(A, B, Cm, batch, M, N, K, lda, ldb, ldc, sa, sb, sc, ta, tb, alpha);
  check_launch("scaled_dot_product_attention (gemm)");
}

template <class D>
__global__ void to_compute_kernel(compute_t<D>* o, const D* x, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) o[i] = to_compute(x[i]);
}

template <class D>
__global__ void from_compute_kernel(D* o, const compute_t<D>* x, int64_t n) {
  for (int64_t i = global_index(); i < n; i += global_stride()) o[i] = from_compute<D>(x[i]);
}

// The tensor's values in the compute type C, contiguous (a fresh buffer for 16-bit floats).
template <class D>
Tensor compute_copy(const Tensor& t, DType cdt, cudaStream_t s) {
  if constexpr (std::is_same_v<D, compute_t<D>>) return t.contiguous_data();  // already the compute type
  Tensor c = t.contiguous_data(), o = Tensor::empty(t.shape(), cdt, t.device());
  if (t.numel() == 0) return o;
  to_compute_kernel<D><<<grid_for(t.numel()), kThreads, 0, s>>>(o.data<compute_t<D>>(), c.data<D>(), t.numel());
  check_launch("scaled_dot_product_attention (load)");
  return o;
}

template <class D>
void store_from_compute(const Tensor& out, const Tensor& c, cudaStream_t s) {
  if (out.numel() == 0) return;
  from_compute_kernel<D><<<grid_for(out.numel()), kThreads, 0, s>>>(out.data<D>(), c.data<compute_t<D>>(), out.numel());
  check_launch("scaled_dot_product_attention (store)");
}

// One block per row (b, l) of the scores sc (in place): masked softmax; lse (log of the row's
// sum of exp; +inf for a fully masked row, whose P is zeros) to the statistics output, and P *
// dropout multiplier left in sc for the P v product.
template <class D>
__global__ void softmax_rows_kernel(compute_t<D>* sc, compute_t<D>* lse, int64_t rows, int64_t L, int64_t S, bool causal,
                                    MaskView<D> mask, MaskView<D> drop, compute_t<D> dscale) {
  using C = compute_t<D>;
  __shared__ C cscratch[32];
  __shared__ double dscratch[32];
  const C ninf = -INFINITY;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t l = row % L;
    C* s_ = sc + row * S;
    int64_t lim = causal ? (S < l + 1 ? S : l + 1) : S;
    C mx = ninf;
    for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
      C v = masked_score(s_[s], row, s, S, lim, mask);
      s_[s] = v;
      mx = v > mx ? v : mx;
    }
    mx = block_max(mx, cscratch);
    if (mx == ninf) {  // fully masked row: zeros, like PyTorch
      for (int64_t s = threadIdx.x; s < S; s += blockDim.x) s_[s] = C(0);
      if (threadIdx.x == 0) lse[row] = C(INFINITY);
      continue;
    }
    double sum = 0;
    for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
      C e = exp(s_[s] - mx);
      s_[s] = e;
      sum += static_cast<double>(e);
    }
    C tot = static_cast<C>(block_sum_all(sum, dscratch)), inv = C(1) / tot;
    if (threadIdx.x == 0) lse[row] = mx + log(tot);
    for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
      C p = s_[s] * inv;
      s_[s] = drop.kind ? p * drop_mult(drop, row * S + s, dscale) : p;
    }
  }
}

// The probabilities recomputed from the scores sc (in place): P = exp(masked score - lse).
template <class D>
__global__ void probs_rows_kernel(compute_t<D>* sc, const compute_t<D>* lse, int64_t rows, int64_t L, int64_t S, bool causal,
                                  MaskView<D> mask) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t l = row % L;
    int64_t lim = causal ? (S < l + 1 ? S : l + 1) : S;
    compute_t<D>* s_ = sc + row * S;
    for (int64_t s = threadIdx.x; s < S; s += blockDim.x) s_[s] = exp(masked_score(s_[s], row, s, S, lim, mask) - lse[row]);
  }
}

// The GEMM path of the forward (inputs (q, k, v, mask, dropout_mask) -> (out, lse)): float64 and
// head dims past the flash kernel's (attention_flash.cu).
template <class T>
void sdpa_forward_gemm(const TensorList& in, const TensorList& out, const Attrs& a) {
  using D = device_t<T>;
  using C = compute_t<D>;
  const Device dev = out[0].device();
  cudaStream_t s = current_stream(dev);
  const DType dt = in[0].dtype(), cdt = std::is_same_v<C, double> ? DType::Float64 : DType::Float32;
  int64_t B = in[0].shape()[0], L = in[0].shape()[1], E = in[0].shape()[2], S = in[1].shape()[1], Ev = in[2].shape()[2];
  Tensor mk, dk;
  MaskView<D> mask = mask_view<D>(in[3], dt, mk), drop = mask_view<D>(in[4], dt, dk);
  const C scale = static_cast<C>(a.f("scale"));
  const double p = a.f("dropout_p");
  const C dscale = dropout_scale<C>(drop.kind, p);
  Tensor q = compute_copy<D>(in[0], cdt, s), k = compute_copy<D>(in[1], cdt, s), v = compute_copy<D>(in[2], cdt, s);
  Tensor sc = Tensor::empty({B, L, S}, cdt, dev), ob = Tensor::empty({B, L, Ev}, cdt, dev);
  // scores = scale q k^T
  gemm<C>(s, q.data<C>(), k.data<C>(), sc.data<C>(), B, L, S, E, E, E, S, L * E, S * E, L * S, false, true, scale);
  if (B * L > 0) {
    softmax_rows_kernel<D><<<row_blocks(B * L), row_threads(S), 0, s>>>(sc.data<C>(), out[1].data<C>(), B * L, L, S,
                                                                  a.b("is_causal"), mask, drop, dscale);
    check_launch("scaled_dot_product_attention (softmax)");
  }
  // out = P' v (S = 0 gives zeros through K = 0)
  gemm<C>(s, sc.data<C>(), v.data<C>(), ob.data<C>(), B, L, Ev, S, S, Ev, Ev, L * S, S * Ev, L * Ev, false, false, C(1));
  store_from_compute<D>(out[0], ob, s);
}

// One block per row of dP (in place): dP * m, then dS = P (dP m - rowsum(P dP m)) into dP and
// the dscores output when there is one (ds non-null).
template <class D>
__global__ void dscores_rows_kernel(compute_t<D>* dP, const compute_t<D>* P, D* ds, int64_t rows, int64_t S, MaskView<D> drop,
                                    compute_t<D> dscale) {
  using C = compute_t<D>;
  __shared__ double dscratch[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    C* dpr = dP + row * S;
    const C* pr = P + row * S;
    double r = 0;
    for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
      C d = dpr[s] * drop_mult(drop, row * S + s, dscale);
      dpr[s] = d;
      r += static_cast<double>(pr[s] * d);
    }
    C rc = static_cast<C>(block_sum_all(r, dscratch));
    for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
      C v = pr[s] * (dpr[s] - rc);
      dpr[s] = v;
      if (ds) ds[row * S + s] = from_compute<D>(v);
    }
  }
}

// P * dropout multiplier, elementwise, in the compute type.
template <class D>
__global__ void dropped_probs_kernel(compute_t<D>* o, const compute_t<D>* P, int64_t n, MaskView<D> drop, compute_t<D> dscale) {
  for (int64_t i = global_index(); i < n; i += global_stride()) o[i] = P[i] * drop_mult(drop, i, dscale);
}

// The GEMM path of the backward (inputs (g, q, k, v, mask, dropout_mask, out, lse) -> (dq, dk, dv,
// dscores)): P recomputed from scale q k^T and lse, then the products above.
template <class T>
void sdpa_backward_gemm(const TensorList& in, const TensorList& out, const Attrs& a) {
  using D = device_t<T>;
  using C = compute_t<D>;
  const Device dev = out[0].device();
  cudaStream_t s = current_stream(dev);
  const DType dt = in[1].dtype(), cdt = std::is_same_v<C, double> ? DType::Float64 : DType::Float32;
  int64_t B = in[1].shape()[0], L = in[1].shape()[1], E = in[1].shape()[2], S = in[2].shape()[1], Ev = in[3].shape()[2];
  Tensor mk, dk_keep;
  MaskView<D> mask = mask_view<D>(in[4], dt, mk), drop = mask_view<D>(in[5], dt, dk_keep);
  const C scale = static_cast<C>(a.f("scale"));
  const double p = a.f("dropout_p");
  const C dscale = dropout_scale<C>(drop.kind, p);
  Tensor g = compute_copy<D>(contig_as(in[0], dt), cdt, s), q = compute_copy<D>(in[1], cdt, s),
         k = compute_copy<D>(in[2], cdt, s), v = compute_copy<D>(in[3], cdt, s), lse = in[7].contiguous_data();
  Tensor P = Tensor::empty({B, L, S}, cdt, dev), dP = Tensor::empty({B, L, S}, cdt, dev), Pd = Tensor::empty({B, L, S}, cdt, dev);
  Tensor dq = Tensor::empty({B, L, E}, cdt, dev), dkb = Tensor::empty({B, S, E}, cdt, dev), dv = Tensor::empty({B, S, Ev}, cdt, dev);
  // P = exp(masked scale q k^T - lse)
  gemm<C>(s, q.data<C>(), k.data<C>(), P.data<C>(), B, L, S, E, E, E, S, L * E, S * E, L * S, false, true, scale);
  if (B * L * S > 0) {
    probs_rows_kernel<D><<<row_blocks(B * L), row_threads(S), 0, s>>>(P.data<C>(), lse.data<C>(), B * L, L, S, a.b("is_causal"),
                                                                mask);
    check_launch("scaled_dot_product_attention_backward (probabilities)");
  }
  // dP = g v^T
  gemm<C>(s, g.data<C>(), v.data<C>(), dP.data<C>(), B, L, S, Ev, Ev, Ev, S, L * Ev, S * Ev, L * S, false, true, C(1));
  // dv = (P m)^T g
  if (B * L * S > 0) {
    dropped_probs_kernel<D><<<grid_for(B * L * S), kThreads, 0, s>>>(Pd.data<C>(), P.data<C>(), B * L * S, drop, dscale);
    check_launch("scaled_dot_product_attention_backward (dropout)");
  }
  gemm<C>(s, Pd.data<C>(), g.data<C>(), dv.data<C>(), B, S, Ev, L, S, Ev, Ev, L * S, L * Ev, S * Ev, true, false, C(1));
  // dS = P (dP m - rowsum(P dP m))
  if (B * L * S > 0) {
    D* ds = out[3].numel() ? out[3].data<D>() : nullptr;
    dscores_rows_kernel<D><<<row_blocks(B * L), row_threads(S), 0, s>>>(dP.data<C>(), P.data<C>(), ds, B * L, S, drop, dscale);
    check_launch("scaled_dot_product_attention_backward (dscores)");
  }
  // dq = scale dS k ; dk = scale dS^T q
  gemm<C>(s, dP.data<C>(), k.data<C>(), dq.data<C>(), B, L, E, S, S, E, E, L * S, S * E, L * E, false, false, scale);
  gemm<C>(s, dP.data<C>(), q.data<C>(), dkb.data<C>(), B, S, E, L, S, E, E, L * S, L * E, S * E, true, false, scale);
  store_from_compute<D>(out[0], dq, s);
  store_from_compute<D>(out[1], dkb, s);
  store_from_compute<D>(out[2], dv, s);
}

void sdpa_forward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  if (out[0].numel() == 0 && out[1].numel() == 0) return;
  if (sdpa_flash_forward(in, out, a)) return;
  LUCID_DISPATCH_FLOATING(in[0].dtype(), "scaled_dot_product_attention", [&] { sdpa_forward_gemm<scalar_t>(in, out, a); });
}

void sdpa_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  DeviceGuard g(out[0].device());
  if (sdpa_flash_backward(in, out, a)) return;
  LUCID_DISPATCH_FLOATING(in[1].dtype(), "scaled_dot_product_attention_backward", [&] { sdpa_backward_gemm<scalar_t>(in, out, a); });
}

}  // namespace

LUCID_REGISTER_KERNEL(ScaledDotProductAttention, CUDA, sdpa_forward_kernel);
LUCID_REGISTER_KERNEL(SdpaBackward, CUDA, sdpa_backward_kernel);

}  // namespace lucid::cuda
