// ScaledDotProductAttention: softmax(q k^T * scale + mask) v, the op record. Batch dims are
// broadcast and flattened by the C++ wrapper, so the op sees q (B, L, E), k (B, S, E), v (B, S, Ev),
// an optional mask (B, L, S) (bool: True keeps; float: added to the scores) and an optional dropout
// keep-mask (B, L, S) drawn by the caller. Outputs (out, lse): lse (B, L) is the row statistic
// log(sum_s exp(score)) in the statistics dtype (float64 for float64, float32 otherwise; +inf for a
// fully masked row, so exp(score - lse) gives that row's zeros), all a flash-style kernel keeps:
// the probabilities (B, L, S) are never stored. SdpaBackward (g, q, k, v, mask, dropout_mask, out,
// lse) recomputes them from q, k and lse and gives (dq, dk, dv, dscores); dscores is the gradient of
// a float mask, (B, L, S) when the attribute mask_grad asks for it, else empty (0,). The fused
// kernels are in backends/<device>/kernels/attention*; the create_graph VJP (sdpa_vjp_with_ops)
// uses matmul and softmax ops.
#include <cmath>
#include <vector>

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/linalg.h"
#include "lucid/ops/core.h"
#include "lucid/ops/creation.h"
#include "lucid/ops/movement.h"
#include "lucid/ops/reduce.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_util.h"

namespace lucid {

namespace {

// VJP written with ops (matmul, softmax, ...) for create_graph=True: the probabilities are
// recomputed from q and k so every path differentiates again. Causal and bool masks become a
// constant additive mask (a large negative number, not -inf, with fully masked rows zeroed by
// a constant row mask, matching the forward's zeros).
TensorList sdpa_vjp_with_ops(const VjpContext& c) {
  const Tensor &q = c.inputs[0], &k = c.inputs[1], &v = c.inputs[2], &m = c.inputs[3], &dm = c.inputs[4];
  int64_t L = q.shape()[1], S = k.shape()[1];
  double scale = c.attrs.f("scale"), p = c.attrs.f("dropout_p");
  bool causal = c.attrs.b("is_causal");
  Tensor scores = mul_scalar(matmul(q, transpose(k, 1, 2)), scale);
  if (m.defined() && is_floating(m.dtype())) scores = add(scores, m);
  Tensor P;
  bool bool_mask = m.defined() && m.dtype() == DType::Bool;
  if (causal || bool_mask) {
    // keep (L, S) or (B, L, S) as 0/1 in float64, written with ops so the mask stays on its device.
    const double neg = q.dtype() == DType::Float16 ? -60000.0 : -1e30;
    Tensor keep = full({L, S}, 1.0, DType::Float64);
    if (causal) keep = tril(keep);
    if (bool_mask) keep = mul(keep, nnutil::as_dtype(m, DType::Float64));
    Tensor add_m = mul_scalar(sub(full({}, 1.0, DType::Float64), keep), neg);  // 0 where kept, else neg
    Tensor valid = amax(keep, {keep.ndim() - 1}, true);                                 // 0 for a fully masked row
    P = mul(softmax(add(scores, nnutil::as_dtype(add_m, q.dtype())), -1), nnutil::as_dtype(valid, q.dtype()));
  } else {
    P = softmax(scores, -1);
  }
  Tensor drop;
  if (dm.defined()) drop = mul_scalar(nnutil::as_dtype(dm, q.dtype()), p < 1.0 ? 1.0 / (1.0 - p) : 0.0);
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
    DType stat = q.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
    return std::vector<TensorMeta>{{{B, L, v.shape()[2]}, q.dtype()}, {{B, L}, stat}};
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.vjp = [](const VjpContext& c) {
    TensorList r(5);
    if (!c.grads[0].defined()) return r;
    if (GradMode::is_enabled()) return sdpa_vjp_with_ops(c);
    const bool mask_grad = c.needs_grad[3] && c.inputs[3].defined() && is_floating(c.inputs[3].dtype());
    TensorList g = dispatch(OpId::SdpaBackward,
                            {c.grads[0], c.inputs[0], c.inputs[1], c.inputs[2], c.inputs[3], c.inputs[4], c.outputs[0], c.outputs[1]},
                            {{"scale", c.attrs.f("scale")},
                             {"is_causal", c.attrs.b("is_causal")},
                             {"dropout_p", c.attrs.f("dropout_p")},
                             {"mask_grad", mask_grad}});
    for (int i = 0; i < 3; ++i)
      if (c.needs_grad[i]) r[i] = g[i];
    if (mask_grad) r[3] = g[3];
    return r;
  };
  return d;
}());

// inputs (g, q, k, v, mask, dropout_mask, out, lse) -> (dq, dk, dv, dscores)
LUCID_REGISTER_OP(SdpaBackward, "scale:float, is_causal:bool, dropout_p:float, mask_grad:bool", [] {
  OpDef d;
  d.num_inputs = 8;
  d.vjp = LUCID_NO_DOUBLE_BACKWARD("scaled_dot_product_attention backward");
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor &q = in[1], &k = in[2], &v = in[3];
    Shape ds = a.b("mask_grad") ? Shape{q.shape()[0], q.shape()[1], k.shape()[1]} : Shape{0};
    return std::vector<TensorMeta>{{q.shape(), q.dtype()}, {k.shape(), q.dtype()}, {v.shape(), q.dtype()}, {ds, q.dtype()}};
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
