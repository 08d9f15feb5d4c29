// Normalisation ops, the records: BatchNorm, LayerNorm, GroupNorm, RmsNorm, their shared backward
// op NormBackward, and BatchNormUpdateStats (the in-place running-stat update, so a tracer sees
// it as an in-place write: of the running mean and variance together, through
// dispatch_inplace_many, one kernel call per layer).
//
// All four norms are one kernel over a [P, Q, S] view of the input (NormLayout, ops/nn_layout.h;
// the CPU kernels are in backends/cpu/kernels/norm.cpp). Each forward op outputs (y, mean, rstd);
// the Python API returns y. The backward is the fused NormBackward kernel,
// gx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)); when a graph of the backward is built
// (create_graph=True) the same VJP is written with core ops instead, so the norms differentiate
// to any order.
#include <vector>

#include "lucid/autograd/grad_mode.h"
#include "lucid/ops/core.h"
#include "lucid/ops/nn.h"
#include "lucid/ops/nn_layout.h"
#include "lucid/ops/nn_util.h"

namespace lucid {

namespace {

using nnutil::kBatch;
using nnutil::kGroup;
using nnutil::kLayer;
using nnutil::kRms;
using nnutil::make_norm_layout;
using nnutil::NormLayout;

void check_param(const Tensor& t, const Shape& expect, const char* op, const char* arg) {
  if (!t.defined()) return;
  nnutil::check_floating(t, op, arg);
  LUCID_CHECK(t.shape() == expect, ValueError, op, ": argument '", arg, "' expected shape ", shape_str(expect),
              ", got ", shape_str(t.shape()));
}

std::vector<TensorMeta> norm_outputs(const Tensor& x, const NormLayout& L) {
  DType sd = nnutil::stat_dtype(x.dtype());
  return {{x.shape(), x.dtype()}, {{L.Q}, sd}, {{L.Q}, sd}};
}

// VJP shared by the four norms; wi / bi: input index of weight / bias (-1: none).
// Plain backward runs the fused NormBackward kernel. When a graph of the backward is being
// built (create_graph=True) or gradients reach the mean/rstd outputs, the VJP is written with
// core ops instead (including the mean/rstd output terms), so it differentiates again.
TensorList norm_vjp(const VjpContext& c, int64_t kind, int64_t k, bool batch_stats, int wi, int bi) {
  TensorList r(c.input_meta.size());
  const Tensor& x = c.inputs[0];
  const Tensor w = wi >= 0 ? c.inputs[wi] : Tensor();
  const bool stat_grads = c.grads.size() > 2 && (c.grads[1].defined() || c.grads[2].defined());
  if (!GradMode::is_enabled() && !stat_grads) {
    if (!c.grads[0].defined()) return r;
    Attrs a{{"kind", kind}, {"k", k}, {"batch_stats", batch_stats}};
    TensorList g = dispatch(OpId::NormBackward, {c.grads[0], x, c.outputs[1], c.outputs[2], w}, a);
    r[0] = g[0];
    if (wi >= 0 && c.needs_grad[wi]) r[wi] = reshape(g[1], c.input_meta[wi].shape);
    if (bi >= 0 && c.needs_grad[bi]) r[bi] = reshape(g[2], c.input_meta[bi].shape);
    return r;
  }
  const Shape& xs = x.shape();
  NormLayout L = make_norm_layout(kind, xs, k);
  Shape V, Vs;
  IntList red;
  if (kind == kBatch) { V = {L.P, L.Q, L.S}; Vs = {1, L.Q, 1}; red = {0, 2}; }
  else if (kind == kGroup) { V = {xs[0], k, L.S}; Vs = {xs[0], k, 1}; red = {2}; }
  else { V = {1, L.Q, L.S}; Vs = {1, L.Q, 1}; red = {2}; }
  const double n = static_cast<double>(L.P * L.S);
  Tensor xv = reshape(x, V);
  Tensor mean_b = reshape(c.outputs[1], Vs), rstd_b = reshape(c.outputs[2], Vs);
  Tensor xhat = L.centered ? mul(sub(xv, mean_b), rstd_b) : mul(xv, rstd_b);
  Tensor wv;
  int64_t cpg = kind == kGroup ? xs[1] / k : 1, hw = kind == kGroup && cpg ? L.S / cpg : 1;
  if (w.defined()) {
    if (kind == kBatch) wv = reshape(w, {1, L.Q, 1});
    else if (kind == kGroup) wv = reshape(expand(reshape(w, {k, cpg, 1}), {k, cpg, hw}), {1, k, L.S});
    else wv = reshape(w, {1, 1, L.S});
  }
  Tensor g = c.grads[0].defined() ? reshape(c.grads[0], V) : Tensor();
  Tensor gx;
  auto acc = [&](const Tensor& t) { gx = gx.defined() ? add(gx, t) : t; };
  if (g.defined()) {
    Tensor gxh = wv.defined() ? mul(g, wv) : g;
    if (batch_stats) {
      Tensor inner = sub(gxh, mul(xhat, mul_scalar(sum(mul(gxh, xhat), red, true), 1.0 / n)));
      if (L.centered) inner = sub(inner, mul_scalar(sum(gxh, red, true), 1.0 / n));
      acc(mul(inner, rstd_b));
    } else {
      acc(mul(gxh, rstd_b));
    }
  }
  if (batch_stats && L.centered && c.grads[1].defined()) acc(expand(mul_scalar(reshape(c.grads[1], Vs), 1.0 / n), V));
  if (batch_stats && c.grads[2].defined())
    acc(mul_scalar(mul(mul(reshape(c.grads[2], Vs), mul(rstd_b, rstd_b)), xhat), -1.0 / n));
  if (gx.defined() && c.needs_grad[0]) r[0] = reshape(gx, xs);
  if (g.defined()) {
    auto pgrad = [&](const Tensor& t, const Shape& wshape) {
      if (kind == kBatch) return reshape(sum(t, {0, 2}, false), wshape);
      if (kind == kGroup) return reshape(sum(reshape(sum(t, {0}, false), {k, cpg, hw}), {2}, false), wshape);
      return reshape(sum(t, {0, 1}, false), wshape);
    };
    if (wi >= 0 && c.needs_grad[wi]) r[wi] = pgrad(mul(g, xhat), c.input_meta[wi].shape);
    if (bi >= 0 && c.needs_grad[bi]) r[bi] = pgrad(g, c.input_meta[bi].shape);
  }
  return r;
}

}  // namespace

// ---- BatchNorm: inputs (x, running_mean, running_var, weight, bias) -----------------------
LUCID_REGISTER_OP(BatchNorm, "training:bool, momentum:float, eps:float", [] {
  OpDef d;
  d.num_inputs = 5;
  d.nondiff_inputs = {1, 2};
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    nnutil::check_floating(x, "batch_norm", "input");
    LUCID_CHECK(x.ndim() >= 2, ValueError, "batch_norm: expected input with 2 or more dims (N, C, *), got shape ",
                shape_str(x.shape()));
    Shape c{x.shape()[1]};
    check_param(in[1], c, "batch_norm", "running_mean");
    check_param(in[2], c, "batch_norm", "running_var");
    check_param(in[3], c, "batch_norm", "weight");
    check_param(in[4], c, "batch_norm", "bias");
    NormLayout L = make_norm_layout(kBatch, x.shape(), 0);
    if (a.b("training")) {
      LUCID_CHECK(L.P * L.S != 1, ValueError, "batch_norm: expected more than 1 value per channel when training, got input shape ",
                  shape_str(x.shape()));
    } else {
      LUCID_CHECK(in[1].defined() && in[2].defined(), ValueError,
                  "batch_norm: running_mean and running_var must be given when training=False");
    }
    return norm_outputs(x, L);
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.unsaved_inputs = {4};   // bias
  d.unsaved_outputs = {0};  // y: the VJP reads x, mean and rstd (so y.relu_() is legal)
  d.vjp = [](const VjpContext& c) { return norm_vjp(c, kBatch, 0, c.attrs.b("training"), 3, 4); };
  return d;
}());

// running = (1 - momentum) * running + momentum * stat, where stat is the batch mean or, for the
// running variance, the unbiased batch variance recovered from the saved rstd: (1/rstd^2 - eps) *
// n/(n-1). kind "mean": inputs (running_mean, mean); "var": (running_var, rstd); "mean_var":
// (running_mean, running_var, mean, rstd), both updated by one kernel call (dispatch_inplace_many:
// one launch per BatchNorm layer, not two). One output per running statistic.
LUCID_REGISTER_OP(BatchNormUpdateStats, "momentum:float, eps:float, n:int, kind:str", [] {
  OpDef d;
  d.num_inputs = -1;
  d.differentiable = false;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const std::string& kind = a.s("kind");
    LUCID_CHECK(kind == "mean" || kind == "var" || kind == "mean_var", ValueError,
                "batch_norm: running-stat update kind must be mean, var or mean_var, got ", kind);
    const size_t k = kind == "mean_var" ? 2 : 1;
    LUCID_CHECK(in.size() == 2 * k, ValueError, "batch_norm: running-stat update '", kind, "' takes ", 2 * k,
                " tensors, got ", in.size());
    std::vector<TensorMeta> metas;
    for (size_t i = 0; i < k; ++i) {
      LUCID_CHECK(in[i].shape() == in[k + i].shape(), ValueError, "batch_norm: running stat shape ",
                  shape_str(in[i].shape()), " does not match the batch statistic shape ", shape_str(in[k + i].shape()));
      nnutil::check_floating(in[i], "batch_norm", "running stats");
      metas.push_back({in[i].shape(), in[i].dtype()});
    }
    return metas;
  };
  return d;
}());

Tensor batch_norm(const Tensor& x, const Tensor& rm, const Tensor& rv, const Tensor& w, const Tensor& b, bool training,
                  double momentum, double eps) {
  // In training the op does not read the running stats: they are not passed (nor saved for
  // backward, which would trip the version check after the in-place update below).
  if (training && x.ndim() >= 2) {
    check_param(rm, {x.shape()[1]}, "batch_norm", "running_mean");
    check_param(rv, {x.shape()[1]}, "batch_norm", "running_var");
  }
  TensorList r = dispatch(OpId::BatchNorm, {x, training ? Tensor() : rm, training ? Tensor() : rv, w, b},
                          {{"training", training}, {"momentum", momentum}, {"eps", eps}});
  if (training) {
    NormLayout L = make_norm_layout(kBatch, x.shape(), 0);
    Attrs a{{"momentum", momentum}, {"eps", eps}, {"n", L.P * L.S}};
    if (rm.defined() && rv.defined())
      dispatch_inplace_many(OpId::BatchNormUpdateStats, {rm, rv}, {rm, rv, r[1].detach(), r[2].detach()},
                            Attrs(a).set("kind", std::string("mean_var")));
    else if (rm.defined())
      dispatch_inplace(OpId::BatchNormUpdateStats, rm, {rm, r[1].detach()}, Attrs(a).set("kind", std::string("mean")));
    else if (rv.defined())
      dispatch_inplace(OpId::BatchNormUpdateStats, rv, {rv, r[2].detach()}, Attrs(a).set("kind", std::string("var")));
  }
  return r[0];
}

// ---- LayerNorm / RmsNorm: inputs (x, weight, bias) / (x, weight); attr k = normalized ndim ---
static NormLayout check_last_dims(const TensorList& in, const Attrs& a, int64_t kind) {
  const char* op = nnutil::norm_name(kind);
  const Tensor& x = in[0];
  nnutil::check_floating(x, op, "input");
  const Shape& ns = a.ints("normalized_shape");
  int64_t k = static_cast<int64_t>(ns.size());
  bool ok = k >= 1 && x.ndim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.shape()[x.ndim() - k + i] == ns[i];
  LUCID_CHECK(ok, ValueError, op, ": given normalized_shape=", shape_str(ns), ", expected input with shape [*, ",
              shape_str(ns).substr(1), ", but got input of size ", shape_str(x.shape()));
  for (size_t i = 1; i < in.size(); ++i) check_param(in[i], ns, op, i == 1 ? "weight" : "bias");
  return make_norm_layout(kind, x.shape(), k);
}

LUCID_REGISTER_OP(LayerNorm, "normalized_shape:ints, eps:float", [] {
  OpDef d;
  d.num_inputs = 3;
  d.infer = [](const TensorList& in, const Attrs& a) { return norm_outputs(in[0], check_last_dims(in, a, kLayer)); };
  d.save = kSaveInputs | kSaveOutputs;
  d.unsaved_inputs = {2};   // bias
  d.unsaved_outputs = {0};  // y
  d.vjp = [](const VjpContext& c) { return norm_vjp(c, kLayer, static_cast<int64_t>(c.attrs.ints("normalized_shape").size()), true, 1, 2); };
  return d;
}());

LUCID_REGISTER_OP(RmsNorm, "normalized_shape:ints, eps:float", [] {
  OpDef d;
  d.num_inputs = 2;
  d.infer = [](const TensorList& in, const Attrs& a) { return norm_outputs(in[0], check_last_dims(in, a, kRms)); };
  d.save = kSaveInputs | kSaveOutputs;
  d.unsaved_outputs = {0};  // y
  d.vjp = [](const VjpContext& c) { return norm_vjp(c, kRms, static_cast<int64_t>(c.attrs.ints("normalized_shape").size()), true, 1, -1); };
  return d;
}());

// ---- GroupNorm: inputs (x, weight, bias); attr num_groups --------------------------------------
LUCID_REGISTER_OP(GroupNorm, "num_groups:int, eps:float", [] {
  OpDef d;
  d.num_inputs = 3;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    nnutil::check_floating(x, "group_norm", "input");
    LUCID_CHECK(x.ndim() >= 2, ValueError, "group_norm: expected input with 2 or more dims (N, C, *), got shape ",
                shape_str(x.shape()));
    int64_t g = a.i("num_groups"), c = x.shape()[1];
    LUCID_CHECK(g > 0 && c % g == 0, ValueError, "group_norm: expected number of channels in input (", c,
                ") to be divisible by num_groups, got num_groups=", g);
    check_param(in[1], {c}, "group_norm", "weight");
    check_param(in[2], {c}, "group_norm", "bias");
    return norm_outputs(x, make_norm_layout(kGroup, x.shape(), g));
  };
  d.save = kSaveInputs | kSaveOutputs;
  d.unsaved_inputs = {2};   // bias
  d.unsaved_outputs = {0};  // y
  d.vjp = [](const VjpContext& c) { return norm_vjp(c, kGroup, c.attrs.i("num_groups"), true, 1, 2); };
  return d;
}());

// ---- NormBackward: inputs (g, x, mean, rstd, weight) -> (gx, gweight, gbias) ---------------
LUCID_REGISTER_OP(NormBackward, "kind:int, k:int, batch_stats:bool", [] {
  OpDef d;
  d.num_inputs = 5;
  d.vjp = LUCID_NO_DOUBLE_BACKWARD("norm_backward (batch_norm/layer_norm/group_norm/rms_norm)");
  d.infer = [](const TensorList& in, const Attrs& a) {
    NormLayout L = make_norm_layout(a.i("kind"), in[1].shape(), a.i("k"));
    DType sd = nnutil::stat_dtype(in[1].dtype());
    return std::vector<TensorMeta>{{in[1].shape(), in[1].dtype()}, {{L.W}, sd}, {{L.W}, sd}};
  };
  return d;
}());

Tensor layer_norm(const Tensor& x, const Shape& ns, const Tensor& w, const Tensor& b, double eps) {
  return dispatch(OpId::LayerNorm, {x, w, b}, {{"normalized_shape", ns}, {"eps", eps}})[0];
}
Tensor rms_norm(const Tensor& x, const Shape& ns, const Tensor& w, double eps) {
  return dispatch(OpId::RmsNorm, {x, w}, {{"normalized_shape", ns}, {"eps", eps}})[0];
}
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& w, const Tensor& b, double eps) {
  return dispatch(OpId::GroupNorm, {x, w, b}, {{"num_groups", num_groups}, {"eps", eps}})[0];
}

}  // namespace lucid
