// fold_batchnorm: an eval-mode BatchNorm applied to a convolution becomes part of the conv.
//
//   y = BatchNorm(Conv(x, w, b), running_mean, running_var, gamma, beta) {training=false}
//   ==>  scale = gamma * rsqrt(running_var + eps)
//        y = Conv(x, w * scale[C_out,1,...], (b - running_mean) * scale + beta)
//
// Why: in inference a BatchNorm is an affine map per channel, so it costs a full pass over the
// activation for nothing; folded, the conv's output is final (and the epilogue pass can then
// fuse a following activation into it). The BN parameters, running stats and conv weight are
// bound state the user may change between calls, so nothing is evaluated at compile time: the
// folding is emitted as IR nodes over [C_out]-sized tensors (plus one weight-sized Mul), which
// run at every call and are cheap next to the conv. Absent pieces drop out: no conv bias
// gives -running_mean * scale, affine=False BN has no gamma/beta.
//
// Folded only when it is exact: BatchNorm in eval mode (training mode uses batch statistics),
// its mean/rstd outputs unused, the conv output read by nothing else and not a graph output or
// assigned value, and every parameter in the conv output's floating dtype, or (autocast) a 16-bit
// conv whose BatchNorm keeps float32 parameters: the folding then runs in float32, from the
// float32 weight the conv's weight was cast from where it was, and casts the folded weight and
// bias to the conv's dtype once (bound state only, so the CPU executor's state cache keeps them).
// That rounds once where eager rounds the conv's output and then the BatchNorm's: within the
// 16-bit type's precision, not bit for bit.
#include "lucid/compile/passes/passes.h"

namespace lucid::ir {

namespace {

bool unused(const std::vector<std::vector<int>>& users, const std::vector<bool>& esc, int v) {
  return users[v].empty() && !esc[v];
}

DType param_dtype(const Graph& g, const Node& bn, DType conv_dtype);

// Index of the Conv node whose output the BatchNorm node `bn` folds into, or -1.
int foldable_conv(const Graph& g, int bn, const std::vector<std::vector<int>>& users, const std::vector<bool>& esc) {
  const Node& n = g.nodes()[bn];
  if (n.op != OpId::BatchNorm || n.attrs.b("training", true)) return -1;
  int x = n.inputs[0], rm = n.inputs[1], rv = n.inputs[2];
  if (rm < 0 || rv < 0) return -1;
  if (!unused(users, esc, n.outputs[1]) || !unused(users, esc, n.outputs[2])) return -1;
  const Value& xv = g.value(x);
  if (xv.kind != ValueKind::Node || g.nodes()[xv.producer].op != OpId::Conv) return -1;
  if (users[x].size() != 1 || esc[x]) return -1;
  for (size_t k = 1; k < n.inputs.size(); ++k)
    if (n.inputs[k] == x) return -1;
  if (!is_floating(xv.dtype)) return -1;
  const Node& conv = g.nodes()[xv.producer];
  for (int p : {conv.inputs[1], conv.inputs[2]})
    if (p >= 0 && g.value(p).dtype != xv.dtype) return -1;
  const DType pt = param_dtype(g, n, xv.dtype);
  for (int p : {rm, rv, n.inputs[3], n.inputs[4]})
    if (p >= 0 && g.value(p).dtype != pt) return -1;
  return xv.producer;
}

// The BatchNorm's parameter dtype a fold accepts: the conv's, or float32 for a 16-bit conv.
DType param_dtype(const Graph& g, const Node& bn, DType conv_dtype) {
  const bool low = conv_dtype == DType::BFloat16 || conv_dtype == DType::Float16;
  return low && g.value(bn.inputs[1]).dtype == DType::Float32 ? DType::Float32 : conv_dtype;
}

// v (a value of the old graph) as dtype `to` in the new graph: the value it was cast from when
// its producer is a Copy from `to` (autocast's cast of a float32 weight), else a new cast.
int as_dtype(const Graph& g, Rewriter& rw, int v, DType to) {
  const Value& val = g.value(v);
  if (val.kind == ValueKind::Node) {
    const Node& p = g.nodes()[val.producer];
    if (p.op == OpId::Copy && g.value(p.inputs[0]).dtype == to && g.value(p.inputs[0]).shape == val.shape)
      return rw.map(p.inputs[0]);
  }
  return rw.add(OpId::Copy, {rw.map(v)}, {{"dtype", to}}, {{val.shape, to, val.device}})[0];
}

}  // namespace

Graph fold_batchnorm(const Graph& g) {
  auto users = value_users(g);
  auto esc = escaping_values(g);
  std::vector<int> folded_into(g.nodes().size(), -1);  // conv node -> its BatchNorm node
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    int conv = foldable_conv(g, static_cast<int>(i), users, esc);
    if (conv >= 0) folded_into[conv] = static_cast<int>(i);
  }
  std::vector<int> conv_of(g.nodes().size(), -1);  // BatchNorm node -> its conv node
  for (size_t c = 0; c < folded_into.size(); ++c)
    if (folded_into[c] >= 0) conv_of[folded_into[c]] = static_cast<int>(c);

  Rewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (folded_into[i] >= 0) continue;  // emitted at its BatchNorm, where every operand is defined
    if (conv_of[i] < 0) {
      rw.copy(n);
      continue;
    }
    // The conv's inputs precede it and the BN's inputs precede the BN, so all are defined here.
    const Node& conv = g.nodes()[conv_of[i]];
    const Value& y = g.value(conv.outputs[0]);
    const int64_t C = y.shape[1];
    const DType ct = y.dtype, t = param_dtype(g, n, ct);  // t: the dtype the folding runs in
    const bool mixed = t != ct;
    const TensorMeta vec{{C}, t, y.device};
    int rm = rw.map(n.inputs[1]), rv = rw.map(n.inputs[2]), gamma = rw.map(n.inputs[3]), beta = rw.map(n.inputs[4]);
    int w = mixed ? as_dtype(g, rw, conv.inputs[1], t) : rw.map(conv.inputs[1]);
    int b = conv.inputs[2] < 0 ? -1 : mixed ? as_dtype(g, rw, conv.inputs[2], t) : rw.map(conv.inputs[2]);

    Tensor eps = Tensor::empty({}, t);
    LUCID_DISPATCH_FLOATING(t, "fold_batchnorm", [&] { *eps.data<scalar_t>() = static_cast<scalar_t>(n.attrs.f("eps")); });
    int e = rw.add(OpId::Add, {rv, rw.add_const(eps)}, {}, {vec})[0];
    int scale = rw.add(OpId::Rsqrt, {e}, {}, {vec})[0];
    if (gamma >= 0) scale = rw.add(OpId::Mul, {gamma, scale}, {}, {vec})[0];
    Shape ws(rw.meta(w).shape.size(), 1);
    ws[0] = C;
    int scale_w = rw.add(OpId::Reshape, {scale}, {{"shape", IntList(ws)}}, {{ws, t, y.device}})[0];
    int w2 = rw.add(OpId::Mul, {w, scale_w}, {}, {rw.meta(w)})[0];
    int shift = b >= 0 ? rw.add(OpId::Sub, {b, rm}, {}, {vec})[0] : rw.add(OpId::Neg, {rm}, {}, {vec})[0];
    int b2 = rw.add(OpId::Mul, {shift, scale}, {}, {vec})[0];
    if (beta >= 0) b2 = rw.add(OpId::Add, {b2, beta}, {}, {vec})[0];
    if (mixed) {
      TensorMeta wm = rw.meta(w);
      wm.dtype = ct;
      w2 = rw.add(OpId::Copy, {w2}, {{"dtype", ct}}, {wm})[0];
      b2 = rw.add(OpId::Copy, {b2}, {{"dtype", ct}}, {{{C}, ct, y.device}})[0];
    }
    int out = rw.add(OpId::Conv, {rw.map(conv.inputs[0]), w2, b2}, conv.attrs, {y.meta()})[0];
    rw.set(n.outputs[0], out);
  }
  return rw.finish();
}

}  // namespace lucid::ir
