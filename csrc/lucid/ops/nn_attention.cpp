// ScaledDotProductAttention: softmax(q k^T * scale + mask) v, fused per block of 64 query rows
// (scores GEMM, masked stable softmax, dropout and the P v GEMM; only the probabilities are
// written out, for backward). Batch dims are broadcast and flattened by the C++ wrapper, so the op
// sees q (B, L, E), k (B, S, E), v (B, S, Ev), an optional mask (B, L, S) (bool: True keeps;
// float: added to the scores) and an optional dropout keep-mask (B, L, S) drawn by the caller.
// Outputs (out, probabilities). SdpaBackward is the fused backward (dq, dk, dv, dscores); the
// dscores output is the gradient of a float mask. The fused kernels use the small register-tiled
// GEMM of nn_vec.h; the create_graph VJP (sdpa_vjp_with_ops) uses matmul and softmax ops.
#include <cmath>
#include <limits>
#include <vector>

#include "lucid/autograd/grad_mode.h"
#include "lucid/core/parallel.h"
#include "lucid/ops/linalg.h"
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

constexpr int64_t kRowBlock = 64;

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
  T *op = out[0].data<T>(), *pp = out[1].data<T>();
  const int64_t nblk = (L + kRowBlock - 1) / kRowBlock;
  const C ninf = -std::numeric_limits<C>::infinity();
  parallel_for(0, B * nblk, 1, [&](int64_t wb, int64_t we) {
    std::vector<C> sc(kRowBlock * S), ob(kRowBlock * Ev);
    for (int64_t w = wb; w < we; ++w) {
      int64_t b = w / nblk, l0 = (w % nblk) * kRowBlock, rb = std::min(kRowBlock, L - l0);
      // Causal rows of this block never look past column l0 + rb - 1.
      int64_t sl = causal ? std::min(S, l0 + rb) : S;
      nnvec::gemm<C>(rb, sl, E, qc.p + (b * L + l0) * E, E, kT.data() + b * E * S, S, sc.data(), S, scale, false);
      for (int64_t r = 0; r < rb; ++r) {
        int64_t l = l0 + r, row = b * L + l;
        C* s_ = sc.data() + r * S;
        int64_t lim = causal ? std::min(S, l + 1) : S;
        for (int64_t s = lim; s < S; ++s) s_[s] = ninf;
        if (mask.kind == 1) {
          for (int64_t s = 0; s < lim; ++s)
            if (!mask.b[row * S + s]) s_[s] = ninf;
        } else if (mask.kind == 2) {
          for (int64_t s = 0; s < lim; ++s) s_[s] += static_cast<C>(mask.f[row * S + s]);
        }
        C mx = nnvec::vmax(s_, S);
        T* prow = pp + row * S;
        if (mx == ninf) {  // fully masked row: zeros, like PyTorch
          for (int64_t s = 0; s < S; ++s) { s_[s] = C(0); prow[s] = static_cast<T>(C(0)); }
          continue;
        }
        nnvec::vexp_sub(s_, S, mx);
        C inv = C(1) / static_cast<C>(nnvec::vsum(s_, S));
        for (int64_t s = 0; s < S; ++s) {
          s_[s] *= inv;
          prow[s] = static_cast<T>(s_[s]);
        }
        if (drop.kind)
          for (int64_t s = 0; s < S; ++s) s_[s] *= drop_mult(drop, row * S + s, dscale);
      }
      nnvec::gemm<C>(rb, Ev, sl, sc.data(), S, vc.p + b * S * Ev, Ev, ob.data(), Ev, C(1), false);
      T* orow = op + (b * L + l0) * Ev;
      for (int64_t i = 0; i < rb * Ev; ++i) orow[i] = static_cast<T>(ob[i]);
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
  CBuf<T> gc(g), qc(q), kc(k), vc(v), Pc(P);
  std::vector<C> vT = transposed(vc.p, B, S, Ev);
  T *dqp = out[0].data<T>(), *dkp = out[1].data<T>(), *dvp = out[2].data<T>(), *dsp = out[3].data<T>();
  parallel_for(0, B, 1, [&](int64_t bb, int64_t be) {
    std::vector<C> dP(L * S), tmp(L * S), tT(S * L), dq(L * E), dkb(S * E), dvb(S * Ev);
    for (int64_t b = bb; b < be; ++b) {
      const C* gb = gc.p + b * L * Ev;
      const C* Pb = Pc.p + b * L * S;
      // dP_dropped = g v^T
      nnvec::gemm<C>(L, S, Ev, gb, Ev, vT.data() + b * Ev * S, S, dP.data(), S, C(1), false);
      // dv = (P * m)^T g
      for (int64_t i = 0; i < L * S; ++i) tmp[i] = Pb[i] * drop_mult(drop, b * L * S + i, dscale);
      nnvec::transpose(L, S, tmp.data(), S, tT.data(), L);
      nnvec::gemm<C>(S, Ev, L, tT.data(), L, gb, Ev, dvb.data(), Ev, C(1), false);
      // dS = P * (dP * m - rowsum(P * dP * m))
      for (int64_t l = 0; l < L; ++l) {
        C* dpr = dP.data() + l * S;
        const C* pr = Pb + l * S;
        C r = 0;
        for (int64_t s = 0; s < S; ++s) {
          dpr[s] *= drop_mult(drop, (b * L + l) * S + s, dscale);
          r += pr[s] * dpr[s];
        }
        T* dsr = dsp + (b * L + l) * S;
        for (int64_t s = 0; s < S; ++s) {
          dpr[s] = pr[s] * (dpr[s] - r);
          dsr[s] = static_cast<T>(dpr[s]);
        }
      }
      // dq = scale * dS k ; dk = scale * dS^T q
      nnvec::gemm<C>(L, E, S, dP.data(), S, kc.p + b * S * E, E, dq.data(), E, scale, false);
      nnvec::transpose(L, S, dP.data(), S, tT.data(), L);
      nnvec::gemm<C>(S, E, L, tT.data(), L, qc.p + b * L * E, E, dkb.data(), E, scale, false);
      for (int64_t i = 0; i < L * E; ++i) dqp[b * L * E + i] = static_cast<T>(dq[i]);
      for (int64_t i = 0; i < S * E; ++i) dkp[b * S * E + i] = static_cast<T>(dkb[i]);
      for (int64_t i = 0; i < S * Ev; ++i) dvp[b * S * Ev + i] = static_cast<T>(dvb[i]);
    }
  });
}

// VJP written with ops (matmul, softmax, ...) for create_graph=True: the probabilities are
// recomputed from q and k so every path differentiates again. Causal and bool masks become a
// constant additive mask (a large negative number, not -inf, with fully masked rows zeroed by
// a constant row mask, matching the forward's zeros).
TensorList sdpa_vjp_with_ops(const VjpContext& c) {
  const Tensor &q = c.inputs[0], &k = c.inputs[1], &v = c.inputs[2], &m = c.inputs[3], &dm = c.inputs[4];
  int64_t B = q.shape()[0], L = q.shape()[1], S = k.shape()[1];
  double scale = c.attrs.f("scale"), p = c.attrs.f("dropout_p");
  bool causal = c.attrs.b("is_causal");
  Tensor scores = mul_scalar(matmul(q, transpose(k, 1, 2)), scale);
  if (m.defined() && is_floating(m.dtype())) scores = add(scores, m);
  Tensor P;
  bool bool_mask = m.defined() && m.dtype() == DType::Bool;
  if (causal || bool_mask) {
    const double neg = q.dtype() == DType::Float16 ? -60000.0 : -1e30;
    Tensor add_m = Tensor::empty({B, L, S}, DType::Float64), valid = Tensor::empty({B, L, 1}, DType::Float64);
    Tensor mb = bool_mask ? nnutil::contig_as(m, DType::Bool) : Tensor();
    double* ap = add_m.data<double>();
    double* vp = valid.data<double>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t l = 0; l < L; ++l) {
        bool any = false;
        for (int64_t s_ = 0; s_ < S; ++s_) {
          int64_t i = (b * L + l) * S + s_;
          bool keep = !(causal && s_ > l) && !(bool_mask && !mb.data<bool>()[i]);
          ap[i] = keep ? 0.0 : neg;
          any |= keep;
        }
        vp[b * L + l] = any ? 1.0 : 0.0;
      }
    P = mul(softmax(add(scores, nnutil::contig_as(add_m, q.dtype())), -1), nnutil::contig_as(valid, q.dtype()));
  } else {
    P = softmax(scores, -1);
  }
  Tensor drop;
  if (dm.defined()) drop = mul_scalar(nnutil::contig_as(dm, q.dtype()), p < 1.0 ? 1.0 / (1.0 - p) : 0.0);
  const Tensor& g = c.grads[0];
  Tensor Pd = drop.defined() ? mul(P, drop) : P;
  Tensor dP = matmul(g, transpose(v, 1, 2));
  if (drop.defined()) dP = mul(dP, drop);
  Tensor dS = mul(P, sub(dP, sum(mul(P, dP), {2}, true)));
  TensorList r(5);
  if (c.needs_grad[0]) r[0] = mul_scalar(matmul(dS, k), scale);
  if (c.needs_grad[1]) r[1] = mul_scalar(matmul(transpose(dS, 1, 2), q), scale);
  if (c.needs_grad[2]) r[2] = matmul(transpose(Pd, 1, 2), g);
  if (c.needs_grad[3] && m.defined() && is_floating(m.dtype())) r[3] = dS;
  return r;
}

void check_mask(const Tensor& m, const Tensor& q, int64_t B, int64_t L, int64_t S, const char* arg) {
  if (!m.defined()) return;
  LUCID_CHECK(m.dtype() == DType::Bool || is_floating(m.dtype()), TypeError, "scaled_dot_product_attention: argument '", arg,
              "' expected a bool or floating tensor, got ", dtype_name(m.dtype()));
  LUCID_CHECK(m.shape() == (Shape{B, L, S}), ValueError, "scaled_dot_product_attention: argument '", arg, "' has shape ",
              shape_str(m.shape()), ", expected ", shape_str({B, L, S}));
}

}  // namespace

LUCID_REGISTER_OP(ScaledDotProductAttention, "scale:float, is_causal:bool, dropout_p:float", [] {
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
    if (GradMode::is_enabled()) return sdpa_vjp_with_ops(c);
    TensorList g = dispatch(OpId::SdpaBackward, {c.grads[0], c.inputs[0], c.inputs[1], c.inputs[2], c.outputs[1], c.inputs[4]},
                            {{"scale", c.attrs.f("scale")}, {"dropout_p", c.attrs.f("dropout_p")}});
    for (int i = 0; i < 3; ++i)
      if (c.needs_grad[i]) r[i] = g[i];
    if (c.needs_grad[3] && c.inputs[3].defined() && is_floating(c.inputs[3].dtype())) r[3] = g[3];
    return r;
  };
  return d;
}());

LUCID_REGISTER_OP(SdpaBackward, "scale:float, dropout_p:float", [] {
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
