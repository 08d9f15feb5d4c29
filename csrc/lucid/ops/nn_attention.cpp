// ScaledDotProductAttention: softmax(q k^T * scale + mask) v, fused per query row (scores,
// stable softmax and the weighted sum of values in one pass, no [L, S] temporaries beyond the
// saved probabilities). Batch dims are broadcast and flattened by the C++ wrapper, so the op
// sees q (B, L, E), k (B, S, E), v (B, S, Ev), an optional mask (B, L, S) (bool: True keeps;
// float: added to the scores) and an optional dropout keep-mask (B, L, S) drawn by the caller.
// Outputs (out, probabilities). SdpaBackward is the fused backward (dq, dk, dv, dscores); the
// dscores output is the gradient of a float mask. Small-GEMM loops are written out here because
// the linalg family's matmul is not a dependency of this file.
#include <cmath>
#include <limits>
#include <vector>

#include "lucid/core/parallel.h"
#include "lucid/ops/core.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_util.h"
#include "lucid/ops/nn_vec.h"

namespace lucid {

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

// (B, S, E) -> (B, E, S) in the compute type.
template <class T>
std::vector<compute_t<T>> transposed(const T* src, int64_t B, int64_t S, int64_t E) {
  std::vector<compute_t<T>> out(static_cast<size_t>(B * S * E));
  parallel_for(0, B, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(S * E, 1)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t e = 0; e < E; ++e) out[(b * E + e) * S + s] = static_cast<compute_t<T>>(src[(b * S + s) * E + e]);
  });
  return out;
}

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
  const T *qp = q.data<T>(), *kp = k.data<T>(), *vp = v.data<T>();
  (void)kp;
  T *op = out[0].data<T>(), *pp = out[1].data<T>();
  std::vector<C> kT = transposed(kp, B, S, E);
  parallel_for(0, B * L, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(S * (E + Ev), 1)), [&](int64_t rb, int64_t re) {
    std::vector<C> sc(S), acc(Ev);
    for (int64_t row = rb; row < re; ++row) {
      int64_t b = row / L, l = row % L;
      const T* qr = qp + row * E;
      const T* vb = vp + b * S * Ev;
      // Scores as E saxpys over the transposed keys (no horizontal sums).
      const int64_t sl = causal ? std::min(S, l + 1) : S;
      const C* kt = kT.data() + b * E * S;
      C* scp = sc.data();
      std::fill(sc.begin(), sc.end(), C(0));
      for (int64_t e = 0; e < E; ++e) {
        const C qe = static_cast<C>(qr[e]) * scale;
        const C* kte = kt + e * S;
#pragma omp simd
        for (int64_t s = 0; s < sl; ++s) scp[s] += qe * kte[s];
      }
      for (int64_t s = sl; s < S; ++s) scp[s] = -std::numeric_limits<C>::infinity();
      if (mask.kind == 1) {
        for (int64_t s = 0; s < S; ++s)
          if (!mask.b[row * S + s]) scp[s] = -std::numeric_limits<C>::infinity();
      } else if (mask.kind == 2) {
        for (int64_t s = 0; s < sl; ++s) scp[s] += static_cast<C>(mask.f[row * S + s]);
      }
      C mx = nnvec::vmax(scp, S);
      T* orow = op + row * Ev;
      T* prow = pp + row * S;
      if (mx == -std::numeric_limits<C>::infinity()) {  // fully masked row: zeros, like PyTorch
        for (int64_t s = 0; s < S; ++s) prow[s] = static_cast<T>(C(0));
        for (int64_t e = 0; e < Ev; ++e) orow[e] = static_cast<T>(C(0));
        continue;
      }
      nnvec::vexp_sub(sc.data(), S, mx);
      C sum = static_cast<C>(nnvec::vsum(sc.data(), S));
      std::fill(acc.begin(), acc.end(), C(0));
      for (int64_t s = 0; s < S; ++s) {
        C pr = sc[s] / sum;
        prow[s] = static_cast<T>(pr);
        if (drop.kind == 1) pr = drop.b[row * S + s] ? pr * dscale : C(0);
        else if (drop.kind == 2) pr = pr * static_cast<C>(drop.f[row * S + s]) * dscale;
        if (pr == C(0)) continue;
        const T* vr = vb + s * Ev;
        C* ap = acc.data();
#pragma omp simd
        for (int64_t e = 0; e < Ev; ++e) ap[e] += pr * static_cast<C>(vr[e]);
      }
      for (int64_t e = 0; e < Ev; ++e) orow[e] = static_cast<T>(acc[e]);
    }
  });
}

// inputs (g, q, k, v, probs, dropout_mask) -> (dq, dk, dv, dscores)
template <class T>
void sdpa_backward(const TensorList& in, const TensorList& out, const Attrs& a) {
  using C = compute_t<T>;
  DType dt = in[1].dtype();
  Tensor g = nnutil::contig_as(in[0], dt), q = in[1].contiguous_data(), k = in[2].contiguous_data(),
         v = in[3].contiguous_data(), P = nnutil::contig_as(in[4], dt);
  Tensor dk_keep;
  MaskView<T> drop = mask_view<T>(in[5], dk_keep);
  int64_t B = q.shape()[0], L = q.shape()[1], E = q.shape()[2], S = k.shape()[1], Ev = v.shape()[2];
  const C scale = static_cast<C>(a.f("scale"));
  const double p = a.f("dropout_p");
  const C dscale = (drop.kind && p < 1.0) ? static_cast<C>(1.0 / (1.0 - p)) : C(drop.kind ? 0 : 1);
  const T *gp = g.data<T>(), *qp = q.data<T>(), *kp = k.data<T>(), *vp = v.data<T>(), *Pp = P.data<T>();
  T *dqp = out[0].data<T>(), *dkp = out[1].data<T>(), *dvp = out[2].data<T>(), *dsp = out[3].data<T>();
  std::vector<C> vT = transposed(vp, B, S, Ev);
  parallel_for(0, B, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(L * S * (E + Ev), 1)), [&](int64_t bb, int64_t be) {
    std::vector<C> dkb(S * E), dvb(S * Ev), dP(S), dq(E);
    for (int64_t b = bb; b < be; ++b) {
      std::fill(dkb.begin(), dkb.end(), C(0));
      std::fill(dvb.begin(), dvb.end(), C(0));
      const T* kb = kp + b * S * E;
      for (int64_t l = 0; l < L; ++l) {
        int64_t row = b * L + l;
        const T* gr = gp + row * Ev;
        const T* qr = qp + row * E;
        const T* Pr = Pp + row * S;
        // dP (before dropout scaling) = g_l . v_s for all s, as Ev saxpys over the transposed values.
        C* dPp = dP.data();
        std::fill(dP.begin(), dP.end(), C(0));
        const C* vt = vT.data() + b * Ev * S;
        for (int64_t e = 0; e < Ev; ++e) {
          const C ge = static_cast<C>(gr[e]);
          const C* vte = vt + e * S;
#pragma omp simd
          for (int64_t s = 0; s < S; ++s) dPp[s] += ge * vte[s];
        }
        C r = 0;
        for (int64_t s = 0; s < S; ++s) {
          C m = C(1);
          if (drop.kind == 1) m = drop.b[row * S + s] ? dscale : C(0);
          else if (drop.kind == 2) m = static_cast<C>(drop.f[row * S + s]) * dscale;
          C pr = static_cast<C>(Pr[s]);
          C dpd = dPp[s];
          C pdm = pr * m;
          if (pdm != C(0)) {
            C* dvr = dvb.data() + s * Ev;
#pragma omp simd
            for (int64_t e = 0; e < Ev; ++e) dvr[e] += pdm * static_cast<C>(gr[e]);
          }
          dP[s] = dpd * m;
          r += pr * dP[s];
        }
        std::fill(dq.begin(), dq.end(), C(0));
        T* dsr = dsp + row * S;
        for (int64_t s = 0; s < S; ++s) {
          C pr = static_cast<C>(Pr[s]);
          C ds = pr * (dP[s] - r);
          dsr[s] = static_cast<T>(ds);
          if (ds == C(0)) continue;
          const T* kr = kb + s * E;
          C* dkr = dkb.data() + s * E;
          C dss = ds * scale;
          C* dqp_ = dq.data();
#pragma omp simd
          for (int64_t e = 0; e < E; ++e) {
            dqp_[e] += dss * static_cast<C>(kr[e]);
            dkr[e] += dss * static_cast<C>(qr[e]);
          }
        }
        T* dqr = dqp + row * E;
        for (int64_t e = 0; e < E; ++e) dqr[e] = static_cast<T>(dq[e]);
      }
      for (int64_t i = 0; i < S * E; ++i) dkp[b * S * E + i] = static_cast<T>(dkb[i]);
      for (int64_t i = 0; i < S * Ev; ++i) dvp[b * S * Ev + i] = static_cast<T>(dvb[i]);
    }
  });
}

void check_mask(const Tensor& m, const Tensor& q, int64_t B, int64_t L, int64_t S, const char* arg) {
  if (!m.defined()) return;
  LUCID_CHECK(m.dtype() == DType::Bool || is_floating(m.dtype()), TypeError, "scaled_dot_product_attention: argument '", arg,
              "' expected a bool or floating tensor, got ", dtype_name(m.dtype()));
  LUCID_CHECK(m.shape() == (Shape{B, L, S}), ValueError, "scaled_dot_product_attention: argument '", arg, "' has shape ",
              shape_str(m.shape()), ", expected ", shape_str({B, L, S}));
}

}  // namespace

LUCID_REGISTER_OP(ScaledDotProductAttention, [] {
  OpDef d;
  d.num_inputs = 5;
  d.nondiff_inputs = {4};
  d.infer = [](const TensorList& in, const Attrs&) {
    const Tensor &q = in[0], &k = in[1], &v = in[2];
    nnutil::check_floating(q, "scaled_dot_product_attention", "query");
    LUCID_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype(), TypeError,
                "scaled_dot_product_attention: expected query, key and value to have the same dtype, got ",
                dtype_name(q.dtype()), ", ", dtype_name(k.dtype()), ", ", dtype_name(v.dtype()));
    LUCID_CHECK(q.ndim() == 3 && k.ndim() == 3 && v.ndim() == 3 && k.shape()[0] == q.shape()[0] &&
                    v.shape()[0] == q.shape()[0] && k.shape()[2] == q.shape()[2] && v.shape()[1] == k.shape()[1],
                ValueError, "scaled_dot_product_attention: incompatible shapes query ", shape_str(q.shape()), ", key ",
                shape_str(k.shape()), ", value ", shape_str(v.shape()));
    int64_t B = q.shape()[0], L = q.shape()[1], S = k.shape()[1];
    check_mask(in[3], q, B, L, S, "attn_mask");
    check_mask(in[4], q, B, L, S, "dropout_mask");
    return std::vector<TensorMeta>{{{B, L, v.shape()[2]}, q.dtype()}, {{B, L, S}, q.dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    if (out[0].numel() == 0 && out[1].numel() == 0) return;
    LUCID_DISPATCH_FLOATING(in[0].dtype(), "scaled_dot_product_attention", [&] { sdpa_forward<scalar_t>(in, out, a); });
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    TensorList r(5);
    if (!c.grads[0].defined()) return r;
    TensorList g = dispatch(OpId::SdpaBackward, {c.grads[0], c.inputs[0], c.inputs[1], c.inputs[2], c.outputs[1], c.inputs[4]},
                            {{"scale", c.attrs.f("scale")}, {"dropout_p", c.attrs.f("dropout_p")}});
    for (int i = 0; i < 3; ++i)
      if (c.needs_grad[i]) r[i] = g[i];
    if (c.needs_grad[3] && c.inputs[3].defined() && is_floating(c.inputs[3].dtype())) r[3] = g[3];
    return r;
  };
  return d;
}());

LUCID_REGISTER_OP(SdpaBackward, [] {
  OpDef d;
  d.num_inputs = 6;
  d.vjp = LUCID_NO_DOUBLE_BACKWARD("scaled_dot_product_attention backward");
  d.infer = [](const TensorList& in, const Attrs&) {
    const Tensor &q = in[1], &k = in[2], &v = in[3], &P = in[4];
    return std::vector<TensorMeta>{{q.shape(), q.dtype()}, {k.shape(), q.dtype()}, {v.shape(), q.dtype()}, {P.shape(), q.dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    LUCID_DISPATCH_FLOATING(in[1].dtype(), "scaled_dot_product_attention_backward", [&] { sdpa_backward<scalar_t>(in, out, a); });
  };
  return d;
}());

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    const Tensor& dropout_mask, double dropout_p, bool is_causal, double scale) {
  const char* op = "scaled_dot_product_attention";
  LUCID_CHECK(q.ndim() >= 2 && k.ndim() >= 2 && v.ndim() >= 2, ValueError, op,
              ": query, key and value must have at least 2 dims, got shapes ", shape_str(q.shape()), ", ",
              shape_str(k.shape()), ", ", shape_str(v.shape()));
  LUCID_CHECK(!(is_causal && attn_mask.defined()), ValueError, op, ": explicit attn_mask should not be set when is_causal=True");
  int64_t L = q.shape()[q.ndim() - 2], E = q.shape()[q.ndim() - 1];
  int64_t S = k.shape()[k.ndim() - 2], Ev = v.shape()[v.ndim() - 1];
  LUCID_CHECK(k.shape()[k.ndim() - 1] == E && v.shape()[v.ndim() - 2] == S, ValueError, op,
              ": incompatible shapes query ", shape_str(q.shape()), ", key ", shape_str(k.shape()), ", value ",
              shape_str(v.shape()));
  auto batch_of = [](const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); };
  Shape batch = broadcast_shapes(broadcast_shapes(batch_of(q), batch_of(k), op), batch_of(v), op);
  Tensor mask = attn_mask;
  if (mask.defined()) {
    if (mask.ndim() < 2) mask = reshape(mask, Shape(2 - mask.ndim(), 1));
    Shape full = broadcast_shapes(batch_of(mask), batch, op);
    LUCID_CHECK(full == batch, ValueError, op, ": attn_mask batch dims ", shape_str(mask.shape()),
                " do not broadcast to ", shape_str(batch));
  }
  int64_t B = numel_of(batch);
  auto to3 = [&](const Tensor& t, int64_t r, int64_t c) {
    Shape s = batch;
    s.push_back(r);
    s.push_back(c);
    return reshape(expand(t, s), {B, r, c});
  };
  Tensor q3 = to3(q, L, E), k3 = to3(k, S, E), v3 = to3(v, S, Ev);
  Tensor m3 = mask.defined() ? to3(mask, L, S) : Tensor();
  Tensor d3 = dropout_mask.defined() ? to3(dropout_mask, L, S) : Tensor();
  if (std::isnan(scale)) scale = 1.0 / std::sqrt(static_cast<double>(E));
  TensorList r = dispatch(OpId::ScaledDotProductAttention, {q3, k3, v3, m3, d3},
                          {{"scale", scale}, {"is_causal", is_causal}, {"dropout_p", d3.defined() ? dropout_p : 0.0}});
  Shape os = batch;
  os.push_back(L);
  os.push_back(Ev);
  return reshape(r[0], os);
}

}  // namespace lucid
