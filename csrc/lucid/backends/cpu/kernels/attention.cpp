// CPU kernels of ScaledDotProductAttention and SdpaBackward (op records in ops/nn_attention.cpp).
// The forward is flash-style: per block of 64 query rows, an online softmax over tiles of 128 keys
// (running row max and sum, the accumulator rescaled when the max grows), causal tiles above the
// diagonal skipped, dropout applied from the caller's keep-mask; it writes out and the row
// statistics lse only, so its memory per thread is O(tile), with no L x S buffer. The backward is
// tiled the same way: P is recomputed per tile from lse, with D = rowsum(g * out), and dq, dk, dv
// are accumulated per tile (dscores, L x S, only when the record asks for a float mask's
// gradient). Both use the small register-tiled GEMM of backends/cpu/nn_vec.h and compute 16-bit
// inputs in float. A bfloat16 forward on a CPU with AMX instead runs its two products as oneDNN
// AMX matmuls (dnnl_matmul) over every batch at once (sdpa_forward_amx: the scores of a call in float32, at
// most kAmxScores of them; P rounded to bfloat16 for the second product, as PyTorch's CPU flash
// attention does): ViT-B/16's 12 attentions went from 28 ms to a few.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "lucid/backends/cpu/dnnl_common.h"
#include "lucid/backends/cpu/dnnl_matmul.h"
#include "lucid/backends/cpu/float16_convert.h"
#include "lucid/backends/cpu/kernels/nn_operands.h"
#include "lucid/backends/cpu/nn_vec.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

// Mask value at flat index i: kind 0 none, 1 bool (keep?), 2 additive float.
template <class T>
struct MaskView {
  int kind = 0;
  const bool* b = nullptr;
  const T* f = nullptr;
};

template <class T>
MaskView<T> mask_view(const Tensor& m, Tensor& keep) {
  MaskView<T> v;
  if (!m.defined()) return v;
  if (m.dtype() == DType::Bool) {
    keep = nnutil::contig_as(m, DType::Bool);
    v.kind = 1;
    v.b = keep.data<bool>();
  } else {
    keep = nnutil::contig_as(m, dtype_of<T>::value);
    v.kind = 2;
    v.f = keep.data<T>();
  }
  return v;
}

// Inputs of the kernels in the compute type C (a view when T == C, else a converted copy).
template <class T>
struct CBuf {
  std::vector<compute_t<T>> store;
  const compute_t<T>* p = nullptr;
  CBuf(const Tensor& t) {
    if constexpr (std::is_same_v<T, compute_t<T>>) {
      p = t.data<T>();
    } else {
      const T* s = t.data<T>();
      store.resize(t.numel());
      for (int64_t i = 0; i < t.numel(); ++i) store[i] = static_cast<compute_t<T>>(s[i]);
      p = store.data();
    }
  }
};

// (B, S, E) -> (B, E, S) in the compute type.
template <class C>
std::vector<C> transposed(const C* src, int64_t B, int64_t S, int64_t E) {
  std::vector<C> out(static_cast<size_t>(B * S * E));
  parallel_for(0, B, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(S * E, 1)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) nnvec::transpose(S, E, src + b * S * E, E, out.data() + b * E * S, S);
  });
  return out;
}

// Dropout multiplier of one (row, s): keep / (1 - p), or 1 without dropout.
template <class T>
inline compute_t<T> drop_mult(const MaskView<T>& drop, int64_t idx, compute_t<T> dscale) {
  using C = compute_t<T>;
  if (drop.kind == 1) return drop.b[idx] ? dscale : C(0);
  if (drop.kind == 2) return static_cast<C>(drop.f[idx]) * dscale;
  return C(1);
}

constexpr int64_t kRowBlock = 64;  // query rows per forward tile
constexpr int64_t kKeyBlock = 128;  // keys per tile, for S above kWholeRow

// Up to this many keys, a tile spans the whole row of keys: no rescaling passes and longer GEMM
// rows (ViT's 197 keys in one tile, not 128 + 69); memory per thread stays O(64 x S).
constexpr int64_t kWholeRow = 256;
inline int64_t key_block(int64_t S) { return S <= kWholeRow ? std::max<int64_t>(S, 1) : kKeyBlock; }

// The masked scores of rows [l0, l0 + rb) against keys [s0, s0 + sb) of batch b into sc (row
// stride ldc): scale q k^T, then causal (s > l) and bool-masked entries -inf, float-mask values
// added. Causal rows of the block never look past column l0 + rb - 1, so the product stops there.
// A bool mask adds -inf, as PyTorch turns it into an additive mask: a NaN score stays NaN.
template <class T>
void masked_scores(const compute_t<T>* q, const compute_t<T>* kT, const MaskView<T>& mask, int64_t b, int64_t l0, int64_t rb,
                   int64_t s0, int64_t sb, int64_t L, int64_t S, int64_t E, compute_t<T> scale, bool causal, compute_t<T>* sc,
                   int64_t ldc) {
  using C = compute_t<T>;
  const C ninf = -std::numeric_limits<C>::infinity();
  int64_t sl = causal ? std::clamp<int64_t>(l0 + rb - s0, 0, sb) : sb;
  nnvec::gemm<C>(rb, sl, E, q + (b * L + l0) * E, E, kT + b * E * S + s0, S, sc, ldc, scale, false);
  for (int64_t r = 0; r < rb; ++r) {
    int64_t l = l0 + r, row = b * L + l;
    C* s_ = sc + r * ldc;
    int64_t lim = causal ? std::clamp<int64_t>(l + 1 - s0, 0, sb) : sb;
    for (int64_t s = lim; s < sb; ++s) s_[s] = ninf;
    if (mask.kind == 1) {
      for (int64_t s = 0; s < lim; ++s)
        if (!mask.b[row * S + s0 + s]) s_[s] += ninf;  // additive, as torch's bool masks: NaN stays NaN
    } else if (mask.kind == 2) {
      for (int64_t s = 0; s < lim; ++s) s_[s] += static_cast<C>(mask.f[row * S + s0 + s]);
    }
  }
}

// Flash-style forward: per (batch, block of kRowBlock query rows), an online softmax over tiles of
// key_block(S) keys. Each row keeps a running max m and sum l (of the undropped probabilities); a
// tile with a larger max rescales the accumulator by exp(m_old - m_new) before adding p v. Causal
// tiles wholly above the diagonal are skipped. Memory per thread is O(tile), independent of S.
// A row whose every score is -inf gives zeros and lse +inf (as PyTorch's zeros); NaN propagates.
template <class T>
void sdpa_forward(const TensorList& in, const TensorList& out, const Attrs& a) {
  using C = compute_t<T>;
  Tensor q = in[0].contiguous_data(), k = in[1].contiguous_data(), v = in[2].contiguous_data();
  Tensor mk, dk;
  MaskView<T> mask = mask_view<T>(in[3], mk), drop = mask_view<T>(in[4], dk);
  int64_t B = q.shape()[0], L = q.shape()[1], E = q.shape()[2], S = k.shape()[1], Ev = v.shape()[2];
  const C scale = static_cast<C>(a.f("scale"));
  const bool causal = a.b("is_causal");
  const double p = a.f("dropout_p");
  const C dscale = (drop.kind && p < 1.0) ? static_cast<C>(1.0 / (1.0 - p)) : C(drop.kind ? 0 : 1);
  CBuf<T> qc(q), kc(k), vc(v);
  std::vector<C> kT = transposed(kc.p, B, S, E);
  T* op = out[0].data<T>();
  C* lse = out[1].data<C>();
  const int64_t nblk = (L + kRowBlock - 1) / kRowBlock;
  const C ninf = -std::numeric_limits<C>::infinity();
  const int64_t KB = key_block(S);
  parallel_for(0, B * nblk, 1, [&](int64_t wb, int64_t we) {
    std::vector<C> sc(kRowBlock * KB), acc(kRowBlock * Ev), m(kRowBlock);
    std::vector<double> l(kRowBlock);
    for (int64_t w = wb; w < we; ++w) {
      int64_t b = w / nblk, l0 = (w % nblk) * kRowBlock, rb = std::min(kRowBlock, L - l0);
      int64_t s_end = causal ? std::min(S, l0 + rb) : S;  // later key tiles are all above the diagonal
      std::fill(acc.begin(), acc.begin() + rb * Ev, C(0));
      std::fill(m.begin(), m.begin() + rb, ninf);
      std::fill(l.begin(), l.begin() + rb, 0.0);
      for (int64_t s0 = 0; s0 < s_end; s0 += KB) {
        int64_t sb = std::min(KB, S - s0);
        int64_t sl = causal ? std::clamp<int64_t>(l0 + rb - s0, 0, sb) : sb;
        masked_scores<T>(qc.p, kT.data(), mask, b, l0, rb, s0, sb, L, S, E, scale, causal, sc.data(), KB);
        for (int64_t r = 0; r < rb; ++r) {
          int64_t row = b * L + l0 + r;
          C* s_ = sc.data() + r * KB;
          C tmax = nnvec::vmax(s_, sb);
          C mnew = (std::isnan(tmax) || std::isnan(m[r])) ? tmax + m[r] : std::max(m[r], tmax);
          if (mnew == ninf) {  // nothing kept so far: this tile adds nothing
            std::fill(s_, s_ + sb, C(0));
            continue;
          }
          C alpha = std::exp(m[r] - mnew);  // 0 on the first kept tile, NaN once a NaN is seen
          m[r] = mnew;
          nnvec::vexp_sub(s_, sb, mnew);
          l[r] = l[r] * static_cast<double>(alpha) + nnvec::vsum(s_, sb);
          if (drop.kind)
            for (int64_t s = 0; s < sb; ++s) s_[s] *= drop_mult(drop, row * S + s0 + s, dscale);
          C* ar = acc.data() + r * Ev;
          if (alpha != C(1))
            for (int64_t e = 0; e < Ev; ++e) ar[e] *= alpha;
        }
        if (sl > 0) nnvec::gemm<C>(rb, Ev, sl, sc.data(), KB, vc.p + (b * S + s0) * Ev, Ev, acc.data(), Ev, C(1), true);
      }
      T* orow = op + (b * L + l0) * Ev;
      for (int64_t r = 0; r < rb; ++r) {
        int64_t row = b * L + l0 + r;
        if (m[r] == ninf) {  // fully masked row
          lse[row] = std::numeric_limits<C>::infinity();
          for (int64_t e = 0; e < Ev; ++e) orow[r * Ev + e] = T(0);
          continue;
        }
        lse[row] = m[r] + static_cast<C>(std::log(l[r]));
        C inv = static_cast<C>(1.0 / l[r]);
        for (int64_t e = 0; e < Ev; ++e) orow[r * Ev + e] = static_cast<T>(acc[r * Ev + e] * inv);
      }
    }
  });
}

// inputs (g, q, k, v, mask, dropout_mask, out, lse) -> (dq, dk, dv, dscores). Flash-style, per
// batch: for each key tile (key_block(S) keys) and each query tile (kRowBlock rows) that is not wholly
// above the causal diagonal, P = exp(masked scores - lse) and dP = g v^T are recomputed for the
// tile; with m the dropout multiplier and D = rowsum(g * out) (= rowsum(P dP m)), dS = P (dP m - D),
// dv += (P m)^T g, dk += scale dS^T q, dq += scale dS k. dscores = dS, written per tile when the
// record asks for it (the gradient of a float mask); otherwise nothing of size L x S exists.
template <class T>
void sdpa_backward(const TensorList& in, const TensorList& out, const Attrs& a) {
  using C = compute_t<T>;
  DType dt = in[1].dtype();
  Tensor g = nnutil::contig_as(in[0], dt), q = in[1].contiguous_data(), k = in[2].contiguous_data(),
         v = in[3].contiguous_data(), o = in[6].contiguous_data(), lse_t = in[7].contiguous_data();
  Tensor mk, dk_keep;
  MaskView<T> mask = mask_view<T>(in[4], mk), drop = mask_view<T>(in[5], dk_keep);
  int64_t B = q.shape()[0], L = q.shape()[1], E = q.shape()[2], S = k.shape()[1], Ev = v.shape()[2];
  const C scale = static_cast<C>(a.f("scale"));
  const bool causal = a.b("is_causal");
  const double p = a.f("dropout_p");
  const C dscale = (drop.kind && p < 1.0) ? static_cast<C>(1.0 / (1.0 - p)) : C(drop.kind ? 0 : 1);
  CBuf<T> gc(g), qc(q), kc(k), vc(v), oc(o);
  std::vector<C> kT = transposed(kc.p, B, S, E), vT = transposed(vc.p, B, S, Ev);
  const C* lse = lse_t.data<C>();
  T *dqp = out[0].data<T>(), *dkp = out[1].data<T>(), *dvp = out[2].data<T>();
  T* dsp = out[3].numel() ? out[3].data<T>() : nullptr;
  const int64_t QB = kRowBlock, KB = key_block(S);
  parallel_for(0, B, 1, [&](int64_t bb, int64_t be) {
    std::vector<C> P(QB * KB), dP(QB * KB), tT(KB * QB), D(L), dq(L * E), dkb(KB * E), dvb(KB * Ev);
    for (int64_t b = bb; b < be; ++b) {
      const C* gb = gc.p + b * L * Ev;
      for (int64_t l = 0; l < L; ++l) {
        double r = 0;
        for (int64_t e = 0; e < Ev; ++e) r += static_cast<double>(gb[l * Ev + e]) * oc.p[(b * L + l) * Ev + e];
        D[l] = static_cast<C>(r);
      }
      std::fill(dq.begin(), dq.end(), C(0));
      for (int64_t s0 = 0; s0 < S; s0 += KB) {
        int64_t sb = std::min(KB, S - s0);
        std::fill(dkb.begin(), dkb.end(), C(0));
        std::fill(dvb.begin(), dvb.end(), C(0));
        for (int64_t l0 = causal ? (s0 / QB) * QB : 0; l0 < L; l0 += QB) {
          int64_t rb = std::min(QB, L - l0);
          if (causal && l0 + rb <= s0) continue;  // every key of the tile is above the diagonal
          masked_scores<T>(qc.p, kT.data(), mask, b, l0, rb, s0, sb, L, S, E, scale, causal, P.data(), KB);
          nnvec::gemm<C>(rb, sb, Ev, gb + l0 * Ev, Ev, vT.data() + b * Ev * S + s0, S, dP.data(), KB, C(1), false);
          for (int64_t r = 0; r < rb; ++r) {
            int64_t row = b * L + l0 + r;
            C *pr = P.data() + r * KB, *dpr = dP.data() + r * KB;
            nnvec::vexp_sub(pr, sb, lse[row]);
            for (int64_t s = 0; s < sb; ++s) {
              C mlt = drop_mult(drop, row * S + s0 + s, dscale);
              dpr[s] = pr[s] * (dpr[s] * mlt - D[l0 + r]);  // dS
              pr[s] *= mlt;                                  // P m
            }
            if (dsp)
              for (int64_t s = 0; s < sb; ++s) dsp[row * S + s0 + s] = static_cast<T>(dpr[s]);
          }
          nnvec::transpose(rb, sb, P.data(), KB, tT.data(), QB);
          nnvec::gemm<C>(sb, Ev, rb, tT.data(), QB, gb + l0 * Ev, Ev, dvb.data(), Ev, C(1), true);
          nnvec::transpose(rb, sb, dP.data(), KB, tT.data(), QB);
          nnvec::gemm<C>(sb, E, rb, tT.data(), QB, qc.p + (b * L + l0) * E, E, dkb.data(), E, scale, true);
          nnvec::gemm<C>(rb, E, sb, dP.data(), KB, kc.p + (b * S + s0) * E, E, dq.data() + l0 * E, E, scale, true);
        }
        for (int64_t i = 0; i < sb * E; ++i) dkp[(b * S + s0) * E + i] = static_cast<T>(dkb[i]);
        for (int64_t i = 0; i < sb * Ev; ++i) dvp[(b * S + s0) * Ev + i] = static_cast<T>(dvb[i]);
      }
      for (int64_t i = 0; i < L * E; ++i) dqp[b * L * E + i] = static_cast<T>(dq[i]);
    }
  });
}

// ---- bfloat16 on AMX -------------------------------------------------------------------------
// Up to this many float32 scores (B x L x S, 32 MiB) a bfloat16 call takes the AMX path; longer
// sequences keep the flash kernel's O(tile) memory.
constexpr int64_t kAmxScores = int64_t(8) << 20;

// scores = scale q k^T (float32, all batches), then per row the flash kernel's rules (causal and
// bool-masked keys -inf, a float mask added, NaN propagating, a fully masked row zeros with lse
// +inf): P = exp(s - max) / sum, dropout applied after the sum, rounded to bfloat16; out = P v.
void sdpa_forward_amx(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor q = in[0].contiguous_data(), k = in[1].contiguous_data(), v = in[2].contiguous_data();
  Tensor mk, dk;
  MaskView<BFloat16> mask = mask_view<BFloat16>(in[3], mk), drop = mask_view<BFloat16>(in[4], dk);
  const int64_t B = q.shape()[0], L = q.shape()[1], E = q.shape()[2], S = k.shape()[1], Ev = v.shape()[2];
  const bool causal = a.b("is_causal");
  const double p = a.f("dropout_p");
  const float dscale = (drop.kind && p < 1.0) ? static_cast<float>(1.0 / (1.0 - p)) : (drop.kind ? 0.f : 1.f);
  Tensor scores = Tensor::empty({B, L, S}, DType::Float32), probs = Tensor::empty({B, L, S}, DType::BFloat16);
  MatmulEpilogue scaled;
  scaled.alpha = a.f("scale");
  dnnl_matmul(q, Tensor::make_view(k, {B, E, S}, {S * E, 1, E}, k.offset()), Tensor(), scaled, scores);  // q k^T
  float* lse = out[1].data<float>();
  const float ninf = -std::numeric_limits<float>::infinity();
  parallel_for(0, B * L, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(S, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      float* s_ = scores.data<float>() + row * S;
      const int64_t lim = causal ? std::clamp<int64_t>(row % L + 1, 0, S) : S;
      for (int64_t s = lim; s < S; ++s) s_[s] = ninf;
      if (mask.kind == 1) {
        for (int64_t s = 0; s < lim; ++s)
          if (!mask.b[row * S + s]) s_[s] += ninf;
      } else if (mask.kind == 2) {
        for (int64_t s = 0; s < lim; ++s) s_[s] += static_cast<float>(mask.f[row * S + s]);
      }
      const float m = nnvec::vmax(s_, S);
      if (m == ninf) {  // fully masked row
        std::fill(s_, s_ + S, 0.f);
        lse[row] = std::numeric_limits<float>::infinity();
      } else {
        nnvec::vexp_sub(s_, S, m);
        const double l = nnvec::vsum(s_, S);
        lse[row] = m + static_cast<float>(std::log(l));
        const float inv = static_cast<float>(1.0 / l);
        for (int64_t s = 0; s < S; ++s) s_[s] *= inv * drop_mult(drop, row * S + s, dscale);
      }
      narrow(s_, probs.data<BFloat16>() + row * S, S);
    }
  });
  dnnl_matmul(probs, v, Tensor(), {}, out[0]);
}

void sdpa_forward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  if (out[0].numel() == 0 && out[1].numel() == 0) return;
  if (in[0].dtype() == DType::BFloat16 && in[1].dtype() == DType::BFloat16 && in[2].dtype() == DType::BFloat16 &&
      out[1].dtype() == DType::Float32 && dnnl_util::has_amx() && out[0].numel() > 0 && in[1].shape()[1] > 0 &&
      in[0].shape()[0] * in[0].shape()[1] * in[1].shape()[1] <= kAmxScores)
    return sdpa_forward_amx(in, out, a);
  LUCID_DISPATCH_FLOATING(in[0].dtype(), "scaled_dot_product_attention", [&] { sdpa_forward<scalar_t>(in, out, a); });
}

void sdpa_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  LUCID_DISPATCH_FLOATING(in[1].dtype(), "scaled_dot_product_attention_backward", [&] { sdpa_backward<scalar_t>(in, out, a); });
}

}  // namespace

LUCID_REGISTER_KERNEL(ScaledDotProductAttention, CPU, sdpa_forward_kernel);
LUCID_REGISTER_KERNEL(SdpaBackward, CPU, sdpa_backward_kernel);

}  // namespace lucid::cpu
