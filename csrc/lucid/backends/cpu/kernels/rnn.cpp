// CPU kernels of LstmRecurrence, GruRecurrence and their backward ops (op records and the math in
// ops/nn_rnn.cpp). Each step is one small GEMM (h @ w_hh^T forward, dgates @ w_hh backward) and
// one fused pass over the gates (Sleef sigmoid/tanh, 8 lanes, for float32). The GEMM is a
// register-tiled AVX2 kernel over a row-major right operand (w_hh transposed for the forward, once
// per weight version through the packed-weights cache), sized for the recurrence's products (B
// rows, 4H x H weights). float64 runs the same loops in scalar C++. The batch rows of a
// recurrence are independent of each other through time, so the rows are split over the threads
// (over_rows), each running every step for its rows: no synchronisation per step. A batch of one runs on one thread (a step is a few microseconds);
// the input projection outside the op is the parallel GEMM.
#include <immintrin.h>
#include <sleef.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "lucid/backends/cpu/kernels/nn_operands.h"
#include "lucid/backends/cpu/packed_weights.h"
#include "lucid/backends/cpu/scalar_vec.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

// C (M x P) = [C +] A (M x Q) @ R (Q x P), all row-major and dense.
template <class T>
void gemm_rows_scalar(const T* A, int64_t M, int64_t Q, const T* R, int64_t P, T* C, bool accumulate, int64_t p0) {
  for (int64_t m = 0; m < M; ++m) {
    T* c = C + m * P;
    if (!accumulate) std::fill(c + p0, c + P, T(0));
    for (int64_t q = 0; q < Q; ++q) {
      const T a = A[m * Q + q];
      const T* r = R + q * P;
      for (int64_t p = p0; p < P; ++p) c[p] += a * r[p];
    }
  }
}

// Rows x 32 columns of C per tile, accumulators in registers across the whole Q loop.
template <int Rows>
void gemm_tile_f32(const float* A, int64_t Q, const float* R, int64_t P, float* C, bool accumulate, int64_t p) {
  __m256 acc[Rows][4];
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = accumulate ? _mm256_loadu_ps(C + i * P + p + 8 * j) : _mm256_setzero_ps();
  for (int64_t q = 0; q < Q; ++q) {
    const float* r = R + q * P + p;
    __m256 r0 = _mm256_loadu_ps(r), r1 = _mm256_loadu_ps(r + 8), r2 = _mm256_loadu_ps(r + 16), r3 = _mm256_loadu_ps(r + 24);
    for (int i = 0; i < Rows; ++i) {
      __m256 a = _mm256_broadcast_ss(A + i * Q + q);
      acc[i][0] = _mm256_fmadd_ps(a, r0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(a, r1, acc[i][1]);
      acc[i][2] = _mm256_fmadd_ps(a, r2, acc[i][2]);
      acc[i][3] = _mm256_fmadd_ps(a, r3, acc[i][3]);
    }
  }
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < 4; ++j) _mm256_storeu_ps(C + i * P + p + 8 * j, acc[i][j]);
}

// One row x 64 columns: eight independent accumulator chains, so a batch-of-one step is bound by
// FMA throughput rather than latency (four chains of the 32-column tile wait on each other). Each
// column sums over q in the same order as the other tiles: the same bits.
void gemm_row_f32_wide(const float* A, int64_t Q, const float* R, int64_t P, float* C, bool accumulate, int64_t p) {
  __m256 acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = accumulate ? _mm256_loadu_ps(C + p + 8 * j) : _mm256_setzero_ps();
  for (int64_t q = 0; q < Q; ++q) {
    const float* r = R + q * P + p;
    const __m256 a = _mm256_broadcast_ss(A + q);
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(a, _mm256_loadu_ps(r + 8 * j), acc[j]);
  }
  for (int j = 0; j < 8; ++j) _mm256_storeu_ps(C + p + 8 * j, acc[j]);
}

template <class T>
void gemm_rows(const T* A, int64_t M, int64_t Q, const T* R, int64_t P, T* C, bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    // 64-column tiles in AVX-512 where the CPU has it (the same bits: each column sums over q in
    // order), the rest below.
    const int64_t p64 = avx512_rows() ? gemm_rows_avx512(A, M, Q, R, P, C, accumulate) : 0;
    const int64_t pv = P / 32 * 32;
    int64_t m = 0;
    for (; m + 3 <= M; m += 3)
      for (int64_t p = p64; p < pv; p += 32) gemm_tile_f32<3>(A + m * Q, Q, R, P, C + m * P, accumulate, p);
    for (; m < M; ++m) {
      int64_t p = p64;
      for (; p + 64 <= pv; p += 64) gemm_row_f32_wide(A + m * Q, Q, R, P, C + m * P, accumulate, p);
      for (; p < pv; p += 32) gemm_tile_f32<1>(A + m * Q, Q, R, P, C + m * P, accumulate, p);
    }
    if (pv < P) gemm_rows_scalar(A, M, Q, R, P, C, accumulate, pv);
  } else {
    gemm_rows_scalar(A, M, Q, R, P, C, accumulate, 0);
  }
}

template <class T> inline T sigmoid1(T x) { return T(1) / (T(1) + std::exp(-x)); }

// x[0:n] = sigmoid(x) (Tanh: tanh(x)), in place. float32 tanh is Sleef's 3.5-ulp one (as the
// elementwise Tanh, scalar_vec.h): about 4e-7 relative, a third of the 1-ulp one's cost, and
// two of the gates' three transcendental passes per step.
template <bool Tanh, class T>
void activate(T* x, int64_t n) {
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float>) {
    if (avx512_rows()) return Tanh ? tanh_rows_avx512(x, x, n) : sigmoid_rows_avx512(x, x, n);
    for (; i + 8 <= n; i += 8) {
      __m256 v = _mm256_loadu_ps(x + i);
      _mm256_storeu_ps(x + i, Tanh ? Sleef_tanhf8_u35avx2(v) : v_sigmoid(v));
    }
  }
  for (; i < n; ++i) x[i] = Tanh ? std::tanh(x[i]) : sigmoid1(x[i]);
}

// w (N x K) -> w^T (K x N) into t, contiguous.
template <class T>
void transpose_into(const T* w, int64_t N, int64_t K, T* t) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) t[k * N + n] = w[n * K + k];
}

template <class T> const T* ptr(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }

// f(b0, b1) over batch-row ranges, split over the threads when the rows' work (per row: the
// elements the steps touch) is worth it.
template <class F>
void over_rows(int64_t B, int64_t work_per_row, const F& f) {
  const int64_t grain = std::max<int64_t>(1, 8 * kParallelGrain / std::max<int64_t>(work_per_row, 1));
  parallel_for(0, B, grain, f);
}

// w_hh^T (H x G), the forward GEMM's right operand: from the packed-weights cache
// (packed_weights.h: keyed by w's storage, guarded by its version) for a weight seen before at
// this version, so a model's w_hh is transposed once, not at every call; else a fresh copy.
template <class T>
const T* transposed_weight(const Tensor& w, int64_t G, int64_t H, std::vector<T>& local, std::shared_ptr<void>& hold) {
  if (weight_pack_enabled()) {
    dnnl_util::Key k;
    k.add(3);  // a recurrence's transposed w_hh (GEMMs key on 1, convolutions on 2)
    k.add(reinterpret_cast<intptr_t>(w.impl()->storage.get())).add(w.offset()).add(static_cast<int64_t>(w.dtype()));
    k.add(G).add(H);
    hold = packed_weight(k, w.impl()->storage, sizeof(T) * G * H, [&] {
      std::shared_ptr<void> buf(new T[G * H], [](void* q) { delete[] static_cast<T*>(q); });
      transpose_into(w.data<T>(), G, H, static_cast<T*>(buf.get()));
      return buf;
    });
    if (hold) return static_cast<const T*>(hold.get());
  }
  local.resize(static_cast<size_t>(G * H));
  transpose_into(w.data<T>(), G, H, local.data());
  return local.data();
}

struct Steps {
  int64_t T;
  bool reverse;
  int64_t at(int64_t s) const { return reverse ? T - 1 - s : s; }  // the time index of processing step s
};

template <class T>
void lstm_forward(const TensorList& in, const TensorList& out, bool reverse) {
  const DType dt = in[0].dtype();
  Tensor xp = nnutil::contig_as(in[0], dt), h0 = nnutil::contig_as(in[1], dt), c0 = nnutil::contig_as(in[2], dt),
         w = nnutil::contig_as(in[3], dt);
  const int64_t Tn = xp.shape()[0], B = xp.shape()[1], H = w.shape()[1], G = 4 * H;
  const Steps st{Tn, reverse};
  std::vector<T> wt_local;
  std::shared_ptr<void> wt_hold;
  const T* wt = transposed_weight<T>(w, G, H, wt_local, wt_hold);
  T *y = out[0].data<T>(), *cs = out[1].data<T>(), *gates = out[2].data<T>();
  over_rows(B, Tn * G * H, [&](int64_t b0, int64_t b1) {
  const int64_t nb = b1 - b0;
  const T *hprev = h0.data<T>() + b0 * H, *cprev = c0.data<T>() + b0 * H;
  for (int64_t s = 0; s < Tn; ++s) {
    const int64_t t = st.at(s);
    T* g = gates + (t * B + b0) * G;
    std::memcpy(g, xp.data<T>() + (t * B + b0) * G, sizeof(T) * nb * G);
    gemm_rows(hprev, nb, H, wt, G, g, true);
    T *h = y + (t * B + b0) * H, *c = cs + (t * B + b0) * H;
    for (int64_t b = 0; b < nb; ++b) {
      T* gb = g + b * G;
      activate<false>(gb, 2 * H);   // i, f
      activate<true>(gb + 2 * H, H);  // g
      activate<false>(gb + 3 * H, H);  // o
      const T *cp = cprev + b * H;
      T *hb = h + b * H, *cb = c + b * H;
      for (int64_t k = 0; k < H; ++k) cb[k] = gb[H + k] * cp[k] + gb[k] * gb[2 * H + k];
      std::memcpy(hb, cb, sizeof(T) * H);
      activate<true>(hb, H);
      for (int64_t k = 0; k < H; ++k) hb[k] *= gb[3 * H + k];
    }
    hprev = h;
    cprev = c;
  }
  });
}

// inputs (gy, gcells, y, cells, gates, h0, c0, w_hh) -> (dxp, dh0, dc0)
template <class T>
void lstm_backward(const TensorList& in, const TensorList& out, bool reverse) {
  const DType dt = in[4].dtype();
  Tensor gy = in[0].defined() ? nnutil::contig_as(in[0], dt) : Tensor();
  Tensor gc = in[1].defined() ? nnutil::contig_as(in[1], dt) : Tensor();
  Tensor y = nnutil::contig_as(in[2], dt), cs = nnutil::contig_as(in[3], dt), gates = nnutil::contig_as(in[4], dt),
         h0 = nnutil::contig_as(in[5], dt), c0 = nnutil::contig_as(in[6], dt), w = nnutil::contig_as(in[7], dt);
  const int64_t Tn = gates.shape()[0], B = gates.shape()[1], H = w.shape()[1], G = 4 * H;
  const Steps st{Tn, reverse};
  T *dxp = out[0].data<T>(), *dh = out[1].data<T>(), *dc = out[2].data<T>();
  std::fill(dh, dh + B * H, T(0));
  std::fill(dc, dc + B * H, T(0));
  const T *pgy = ptr<T>(gy), *pgc = ptr<T>(gc);
  over_rows(B, Tn * G * H, [&](int64_t b0, int64_t b1) {
  const int64_t nb = b1 - b0;
  std::vector<T> tanh_c(static_cast<size_t>(H));  // tanh of one row's cells, vectorised as the forward's
  for (int64_t s = Tn - 1; s >= 0; --s) {
    const int64_t t = st.at(s), tp = s > 0 ? st.at(s - 1) : -1;
    const T* cprev = (tp >= 0 ? cs.data<T>() + tp * B * H : c0.data<T>()) + b0 * H;
    const T* c = cs.data<T>() + (t * B + b0) * H;
    const T* g = gates.data<T>() + (t * B + b0) * G;
    T* dg = dxp + (t * B + b0) * G;
    for (int64_t b = 0; b < nb; ++b) {
      const T *gb = g + b * G, *cb = c + b * H, *cpb = cprev + b * H;
      T *dhb = dh + (b0 + b) * H, *dcb = dc + (b0 + b) * H, *dgb = dg + b * G;
      std::memcpy(tanh_c.data(), cb, sizeof(T) * H);
      activate<true>(tanh_c.data(), H);
      for (int64_t k = 0; k < H; ++k) {
        const T i = gb[k], f = gb[H + k], gg = gb[2 * H + k], o = gb[3 * H + k];
        const T dhk = dhb[k] + (pgy ? pgy[(t * B + b0 + b) * H + k] : T(0));
        const T tc = tanh_c[k];
        const T dck = dcb[k] + (pgc ? pgc[(t * B + b0 + b) * H + k] : T(0)) + dhk * o * (T(1) - tc * tc);
        dgb[k] = dck * gg * i * (T(1) - i);
        dgb[H + k] = dck * cpb[k] * f * (T(1) - f);
        dgb[2 * H + k] = dck * i * (T(1) - gg * gg);
        dgb[3 * H + k] = dhk * tc * o * (T(1) - o);
        dcb[k] = dck * f;
      }
    }
    gemm_rows(dg, nb, G, w.data<T>(), H, dh + b0 * H, false);
  }
  });
}

template <class T>
void gru_forward(const TensorList& in, const TensorList& out, bool reverse) {
  const DType dt = in[0].dtype();
  Tensor xp = nnutil::contig_as(in[0], dt), h0 = nnutil::contig_as(in[1], dt), w = nnutil::contig_as(in[2], dt);
  Tensor bias = in[3].defined() ? nnutil::contig_as(in[3], dt) : Tensor();
  const int64_t Tn = xp.shape()[0], B = xp.shape()[1], H = w.shape()[1], G = 3 * H;
  const Steps st{Tn, reverse};
  std::vector<T> wt_local, hp(static_cast<size_t>(B * G));
  std::shared_ptr<void> wt_hold;
  const T* wt = transposed_weight<T>(w, G, H, wt_local, wt_hold);
  const T* pb = ptr<T>(bias);
  T *y = out[0].data<T>(), *gates = out[1].data<T>(), *hn = out[2].data<T>();
  over_rows(B, Tn * G * H, [&](int64_t b0, int64_t b1) {
  const int64_t nb = b1 - b0;
  const T* hprev = h0.data<T>() + b0 * H;
  T* hpr = hp.data() + b0 * G;  // this range's rows of the h @ w_hh^T buffer
  for (int64_t s = 0; s < Tn; ++s) {
    const int64_t t = st.at(s);
    for (int64_t b = 0; b < nb; ++b) {
      if (pb) std::memcpy(hpr + b * G, pb, sizeof(T) * G);
      else std::fill(hpr + b * G, hpr + (b + 1) * G, T(0));
    }
    gemm_rows(hprev, nb, H, wt, G, hpr, true);
    T *g = gates + (t * B + b0) * G, *h = y + (t * B + b0) * H, *n_pre = hn + (t * B + b0) * H;
    const T* x = xp.data<T>() + (t * B + b0) * G;
    for (int64_t b = 0; b < nb; ++b) {
      T* gb = g + b * G;
      const T *xb = x + b * G, *hb = hpr + b * G, *hpb = hprev + b * H;
      for (int64_t k = 0; k < 2 * H; ++k) gb[k] = xb[k] + hb[k];
      activate<false>(gb, 2 * H);  // r, z
      for (int64_t k = 0; k < H; ++k) {
        n_pre[b * H + k] = hb[2 * H + k];
        gb[2 * H + k] = xb[2 * H + k] + gb[k] * hb[2 * H + k];
      }
      activate<true>(gb + 2 * H, H);  // n
      for (int64_t k = 0; k < H; ++k) {
        const T z = gb[H + k], n = gb[2 * H + k];
        h[b * H + k] = (T(1) - z) * n + z * hpb[k];
      }
    }
    hprev = h;
  }
  });
}

// inputs (gy, y, gates, hn, h0, w_hh) -> (dxp, dhp, dh0)
template <class T>
void gru_backward(const TensorList& in, const TensorList& out, bool reverse) {
  const DType dt = in[2].dtype();
  Tensor gy = nnutil::contig_as(in[0], dt), y = nnutil::contig_as(in[1], dt), gates = nnutil::contig_as(in[2], dt),
         hn = nnutil::contig_as(in[3], dt), h0 = nnutil::contig_as(in[4], dt), w = nnutil::contig_as(in[5], dt);
  const int64_t Tn = gates.shape()[0], B = gates.shape()[1], H = w.shape()[1], G = 3 * H;
  const Steps st{Tn, reverse};
  T *dxp = out[0].data<T>(), *dhp = out[1].data<T>(), *dh = out[2].data<T>();
  std::fill(dh, dh + B * H, T(0));
  std::vector<T> direct_all(static_cast<size_t>(B * H));
  over_rows(B, Tn * G * H, [&](int64_t b0, int64_t b1) {
  const int64_t nb = b1 - b0;
  T* direct = direct_all.data() + b0 * H;
  T* dhr = dh + b0 * H;
  for (int64_t s = Tn - 1; s >= 0; --s) {
    const int64_t t = st.at(s), tp = s > 0 ? st.at(s - 1) : -1;
    const T* hprev = (tp >= 0 ? y.data<T>() + tp * B * H : h0.data<T>()) + b0 * H;
    const T *g = gates.data<T>() + (t * B + b0) * G, *npre = hn.data<T>() + (t * B + b0) * H,
            *pgy = gy.data<T>() + (t * B + b0) * H;
    T *dx = dxp + (t * B + b0) * G, *dhh = dhp + (t * B + b0) * G;
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t k = 0; k < H; ++k) {
        const int64_t j = b * H + k;
        const T r = g[b * G + k], z = g[b * G + H + k], n = g[b * G + 2 * H + k];
        const T dhk = dhr[j] + pgy[j];
        const T dan = dhk * (T(1) - z) * (T(1) - n * n);
        const T dar = dan * npre[j] * r * (T(1) - r);
        const T daz = dhk * (hprev[j] - n) * z * (T(1) - z);
        dx[b * G + k] = dar;
        dx[b * G + H + k] = daz;
        dx[b * G + 2 * H + k] = dan;
        dhh[b * G + k] = dar;
        dhh[b * G + H + k] = daz;
        dhh[b * G + 2 * H + k] = dan * r;
        direct[j] = dhk * z;
      }
    std::memcpy(dhr, direct, sizeof(T) * nb * H);
    gemm_rows(dhh, nb, G, w.data<T>(), H, dhr, true);
  }
  });
}

#define LUCID_RNN_KERNEL(name, fn, dtype_input)                                            \
  void name(const TensorList& in, const TensorList& out, const Attrs& a) {                 \
    if (in[dtype_input].dtype() == DType::Float64) fn<double>(in, out, a.b("reverse"));     \
    else fn<float>(in, out, a.b("reverse"));                                               \
  }
LUCID_RNN_KERNEL(lstm_forward_kernel, lstm_forward, 0)
LUCID_RNN_KERNEL(lstm_backward_kernel, lstm_backward, 4)
LUCID_RNN_KERNEL(gru_forward_kernel, gru_forward, 0)
LUCID_RNN_KERNEL(gru_backward_kernel, gru_backward, 2)
#undef LUCID_RNN_KERNEL

}  // namespace

LUCID_REGISTER_KERNEL(LstmRecurrence, CPU, lstm_forward_kernel);
LUCID_REGISTER_KERNEL(LstmRecurrenceBackward, CPU, lstm_backward_kernel);
LUCID_REGISTER_KERNEL(GruRecurrence, CPU, gru_forward_kernel);
LUCID_REGISTER_KERNEL(GruRecurrenceBackward, CPU, gru_backward_kernel);

}  // namespace lucid::cpu
