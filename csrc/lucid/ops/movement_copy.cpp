// Copying movement ops: Cat, Flip, Roll, Tril, Triu, Repeat, Pad (+ PadBackward for the
// non-constant modes): their records (infer, VJP) and C++ API. The CPU kernels
// (backends/cpu/kernels/movement.cpp) are strided copies over computed views, so they are
// written once for every dtype. stack is cat of unsqueezed inputs; repeat_interleave and rot90
// are composites.
#include <algorithm>

#include "lucid/ops/movement.h"
#include "lucid/ops/movement_util.h"

namespace lucid {

// ---- Cat ----------------------------------------------------------------------------------
static std::vector<TensorMeta> infer_cat(const TensorList& in, const Attrs& a) {
  LUCID_CHECK(!in.empty(), ValueError, "cat: expected a non-empty list of tensors");
  int ref = -1;
  DType dt = in[0].dtype();
  for (size_t i = 0; i < in.size(); ++i) {
    LUCID_CHECK(in[i].ndim() > 0, ValueError, "cat: zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
    dt = promote_types(dt, in[i].dtype());
    if (ref < 0 && !cat_skipped(in[i])) ref = static_cast<int>(i);
  }
  if (ref < 0) return {{Shape{0}, dt}};
  const Shape& rs = in[ref].shape();
  int64_t dim = wrap_dim(a.i("dim"), in[ref].ndim(), "cat");
  Shape out = rs;
  out[dim] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (cat_skipped(in[i])) continue;
    const Shape& s = in[i].shape();
    LUCID_CHECK(s.size() == rs.size(), ValueError, "cat: tensors must have the same number of dimensions: tensor ",
                ref, " has ", rs.size(), " but tensor ", i, " has ", s.size());
    for (size_t d = 0; d < s.size(); ++d)
      LUCID_CHECK(static_cast<int64_t>(d) == dim || s[d] == rs[d], ValueError,
                  "cat: sizes of tensors must match except in dimension ", dim, "; expected size ", rs[d],
                  " but got size ", s[d], " in dimension ", d, " for tensor number ", i, " in the list");
    out[dim] = checked_add(out[dim], s[dim], "cat");
  }
  return {{out, dt}};
}

LUCID_REGISTER_OP(Cat, "dim:int", [] {
  OpDef d;
  d.num_inputs = -1;
  d.infer = infer_cat;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    int64_t dim = wrap_dim(c.attrs.i("dim"), g.ndim(), "cat");
    TensorList r(c.input_meta.size());
    int64_t at = 0;
    for (size_t i = 0; i < c.input_meta.size(); ++i) {
      const Shape& s = c.input_meta[i].shape;
      if (s.size() == 1 && s[0] == 0 && g.ndim() != 1) continue;
      if (c.needs_grad[i]) r[i] = slice(g, dim, at, at + s[dim], 1);
      at += s[dim];
    }
    return r;
  };
  return d;
}());

Tensor cat(const TensorList& xs, int64_t dim) { return dispatch1(OpId::Cat, xs, {{"dim", dim}}); }

Tensor stack(const TensorList& xs, int64_t dim) {
  LUCID_CHECK(!xs.empty(), ValueError, "stack: expected a non-empty list of tensors");
  int64_t d = wrap_dim(dim, xs[0].ndim() + 1, "stack");
  TensorList u;
  for (size_t i = 0; i < xs.size(); ++i) {
    LUCID_CHECK(xs[i].shape() == xs[0].shape(), ValueError, "stack: expects each tensor to be equal size, but got ",
                shape_str(xs[0].shape()), " at entry 0 and ", shape_str(xs[i].shape()), " at entry ", i);
    u.push_back(unsqueeze(xs[i], d));
  }
  return cat(u, d);
}

// ---- Flip ---------------------------------------------------------------------------------
IntList unique_dims(const IntList& dims, int64_t nd, const char* op) {
  IntList out;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, nd, op);
    LUCID_CHECK(std::find(out.begin(), out.end(), w) == out.end(), ValueError, op, ": dim ", w,
                " appears multiple times in the list of dims");
    out.push_back(w);
  }
  return out;
}

LUCID_REGISTER_OP(Flip, "dims:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    unique_dims(a.ints("dims"), in[0].ndim(), "flip");
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) { return TensorList{flip(c.grads[0], c.attrs.ints("dims"))}; };
  return d;
}());

Tensor flip(const Tensor& x, const IntList& dims) { return dispatch1(OpId::Flip, {x}, {{"dims", dims}}); }

// ---- Roll ---------------------------------------------------------------------------------
LUCID_REGISTER_OP(Roll, "shifts:ints, dims:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const IntList& sh = a.ints("shifts");
    const IntList& dims = a.ints("dims");
    LUCID_CHECK(sh.size() == dims.size() && !dims.empty(), ValueError, "roll: shifts (", sh.size(),
                " values) and dims (", dims.size(), " values) must have the same non-zero length");
    for (int64_t dd : dims) wrap_dim(dd, in[0].ndim(), "roll");
    return std::vector<TensorMeta>{{in[0].shape(), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    IntList sh = c.attrs.ints("shifts");
    for (auto& v : sh) v = -v;
    return TensorList{roll(c.grads[0], sh, c.attrs.ints("dims"))};
  };
  return d;
}());

Tensor roll(const Tensor& x, const IntList& shifts, const IntList& dims) {
  if (dims.empty()) {
    LUCID_CHECK(shifts.size() == 1, ValueError, "roll: without dims, shifts must have one value, got ", shifts.size());
    Tensor f = reshape(x, {-1});
    return reshape(dispatch1(OpId::Roll, {f}, {{"shifts", shifts}, {"dims", IntList{0}}}), x.shape());
  }
  return dispatch1(OpId::Roll, {x}, {{"shifts", shifts}, {"dims", dims}});
}

// ---- Tril / Triu --------------------------------------------------------------------------
static std::vector<TensorMeta> infer_tri(const TensorList& in, const Attrs&) {
  LUCID_CHECK(in[0].ndim() >= 2, ValueError, "tril/triu: input tensor must have at least 2 dimensions, got ",
              in[0].ndim());
  return {{in[0].shape(), in[0].dtype()}};
}

LUCID_REGISTER_OP(Tril, "diagonal:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = infer_tri;
  d.vjp = [](const VjpContext& c) { return TensorList{tril(c.grads[0], c.attrs.i("diagonal"))}; };
  return d;
}());

LUCID_REGISTER_OP(Triu, "diagonal:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = infer_tri;
  d.vjp = [](const VjpContext& c) { return TensorList{triu(c.grads[0], c.attrs.i("diagonal"))}; };
  return d;
}());

Tensor tril(const Tensor& x, int64_t diagonal) { return dispatch1(OpId::Tril, {x}, {{"diagonal", diagonal}}); }
Tensor triu(const Tensor& x, int64_t diagonal) { return dispatch1(OpId::Triu, {x}, {{"diagonal", diagonal}}); }

// ---- Repeat -------------------------------------------------------------------------------
LUCID_REGISTER_OP(Repeat, "repeats:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const IntList& r = a.ints("repeats");
    const Tensor& x = in[0];
    LUCID_CHECK(static_cast<int64_t>(r.size()) >= x.ndim(), ValueError, "repeat: number of repeat dims (", r.size(),
                ") can not be smaller than the number of dims of the tensor (", x.ndim(), ")");
    int64_t off = static_cast<int64_t>(r.size()) - x.ndim();
    Shape out(r.size());
    for (size_t i = 0; i < r.size(); ++i) {
      LUCID_CHECK(r[i] >= 0, ValueError, "repeat: repeats must be non-negative, got ", shape_str(r));
      int64_t xi = static_cast<int64_t>(i) - off;
      out[i] = checked_mul(r[i], xi < 0 ? 1 : x.shape()[xi], "repeat");
    }
    return std::vector<TensorMeta>{{out, x.dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    const IntList& r = c.attrs.ints("repeats");
    const Shape& xs = c.input_meta[0].shape;
    int64_t off = static_cast<int64_t>(r.size()) - static_cast<int64_t>(xs.size());
    Shape vs;
    IntList sum_dims;
    for (size_t i = 0; i < r.size(); ++i) {
      int64_t xi = static_cast<int64_t>(i) - off;
      sum_dims.push_back(static_cast<int64_t>(vs.size()));
      vs.push_back(r[i]);
      vs.push_back(xi < 0 ? 1 : xs[xi]);
    }
    return TensorList{reshape(sum(reshape(c.grads[0], vs), sum_dims), xs)};
  };
  return d;
}());

Tensor repeat(const Tensor& x, const IntList& repeats) { return dispatch1(OpId::Repeat, {x}, {{"repeats", repeats}}); }

Tensor repeat_interleave(const Tensor& x, int64_t repeats, int64_t dim, bool flat) {
  LUCID_CHECK(repeats >= 0, ValueError, "repeat_interleave: repeats must be non-negative, got ", repeats);
  Tensor t = flat ? reshape(x, {-1}) : x;
  int64_t d = wrap_dim(flat ? 0 : dim, t.ndim(), "repeat_interleave");
  if (t.ndim() == 0) t = reshape(t, {1});
  Shape e = t.shape();
  e.insert(e.begin() + d + 1, repeats);
  Shape out = t.shape();
  out[d] *= repeats;
  return reshape(expand(unsqueeze(t, d + 1), e), out);
}

Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, int64_t dim, bool flat) {
  LUCID_CHECK(is_integral(repeats.dtype()), TypeError, "repeat_interleave: repeats must be an integer tensor, got ",
              dtype_name(repeats.dtype()));
  LUCID_CHECK(repeats.ndim() <= 1, ValueError, "repeat_interleave: repeats must be 0-D or 1-D, got ", repeats.ndim(), "-D");
  if (repeats.ndim() == 0 || repeats.numel() == 1) {
    Tensor r = host_copy(cast(reshape(repeats, {1}), DType::Int64));
    return repeat_interleave(x, *r.data<int64_t>(), dim, flat);
  }
  Tensor t = flat ? reshape(x, {-1}) : x;
  int64_t d = wrap_dim(flat ? 0 : dim, t.ndim(), "repeat_interleave");
  LUCID_CHECK(repeats.numel() == t.shape()[d], ValueError, "repeat_interleave: repeats has ", repeats.numel(),
              " values but dimension ", d, " has size ", t.shape()[d]);
  Tensor r = host_copy(cast(repeats, DType::Int64));
  const int64_t* rp = r.data<int64_t>();
  int64_t total = 0;
  for (int64_t i = 0; i < r.numel(); ++i) {
    LUCID_CHECK(rp[i] >= 0, ValueError, "repeat_interleave: repeats must be non-negative, got ", rp[i]);
    total += rp[i];
  }
  Tensor idx = Tensor::empty({total}, DType::Int64);
  int64_t* ip = idx.data<int64_t>();
  for (int64_t i = 0, w = 0; i < r.numel(); ++i)
    for (int64_t j = 0; j < rp[i]; ++j) ip[w++] = i;
  return index_select(t, d, on_device(idx, t.device()));
}

Tensor rot90(const Tensor& x, int64_t k, const IntList& dims) {
  LUCID_CHECK(dims.size() == 2, ValueError, "rot90: expected 2 dims, got ", dims.size());
  LUCID_CHECK(x.ndim() >= 2, ValueError, "rot90: expected a tensor with at least 2 dims, got ", x.ndim());
  int64_t d0 = wrap_dim(dims[0], x.ndim(), "rot90"), d1 = wrap_dim(dims[1], x.ndim(), "rot90");
  LUCID_CHECK(d0 != d1, ValueError, "rot90: dims must be different, got ", d0, " and ", d1);
  k = ((k % 4) + 4) % 4;
  if (k == 1) return transpose(flip(x, {d1}), d0, d1);
  if (k == 2) return flip(x, {d0, d1});
  if (k == 3) return transpose(flip(x, {d0}), d0, d1);
  return cast(x, x.dtype());
}

// ---- Pad ----------------------------------------------------------------------------------
// pad = (left_last, right_last, left_prev, right_prev, ...), as in torch.nn.functional.pad.
static Shape padded_shape(const Shape& s, const IntList& p, const std::string& mode) {
  LUCID_CHECK(p.size() % 2 == 0, ValueError, "pad: padding length must be divisible by 2, got ", p.size());
  LUCID_CHECK(static_cast<int64_t>(p.size() / 2) <= static_cast<int64_t>(s.size()), ValueError,
              "pad: padding length ", p.size(), " is too large for a tensor with ", s.size(), " dims");
  LUCID_CHECK(mode == "constant" || mode == "reflect" || mode == "replicate" || mode == "circular", ValueError,
              "pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got '", mode, "'");
  Shape out = s;
  for (size_t k = 0; k < p.size() / 2; ++k) {
    int64_t d = static_cast<int64_t>(s.size()) - 1 - static_cast<int64_t>(k);
    int64_t l = p[2 * k], r = p[2 * k + 1], n = s[d];
    out[d] = checked_add(checked_add(n, l, "pad"), r, "pad");
    LUCID_CHECK(out[d] >= 0, ValueError, "pad: the padded size ", out[d], " of dimension ", d, " is negative (size ",
                n, ", pads ", l, ", ", r, ")");
    if (mode == "constant") continue;
    LUCID_CHECK(l >= 0 && r >= 0, ValueError, "pad: negative padding is only supported in constant mode");
    if (mode == "reflect")
      LUCID_CHECK(l < n && r < n, ValueError, "pad: padding (", l, ", ", r, ") should be less than dimension ", d,
                  " of size ", n, " in reflect mode");
    else if (mode == "circular")
      LUCID_CHECK(l <= n && r <= n, ValueError, "pad: padding (", l, ", ", r, ") should be at most dimension ", d,
                  " of size ", n, " in circular mode");
    else
      LUCID_CHECK(n > 0 || (l == 0 && r == 0), ValueError, "pad: cannot replicate-pad an empty dimension ", d);
  }
  return out;
}

LUCID_REGISTER_OP(Pad, "pad:ints, mode:str, value:float", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    return std::vector<TensorMeta>{{padded_shape(in[0].shape(), a.ints("pad"), a.s("mode")), in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) {
    const std::string& mode = c.attrs.s("mode");
    if (mode == "constant") {
      IntList neg = c.attrs.ints("pad");
      for (auto& v : neg) v = -v;
      return TensorList{pad(c.grads[0], neg, "constant", 0.0)};
    }
    return TensorList{dispatch1(OpId::PadBackward, {c.grads[0]},
                                {{"pad", c.attrs.ints("pad")}, {"mode", mode}, {"shape", c.input_meta[0].shape}})};
  };
  return d;
}());

// Adjoint of a non-constant Pad: every output gradient slice is added to its source slice.
LUCID_REGISTER_OP(PadBackward, "pad:ints, mode:str, shape:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Shape& s = a.ints("shape");
    LUCID_CHECK(padded_shape(s, a.ints("pad"), a.s("mode")) == in[0].shape(), ValueError,
                "pad_backward: gradient shape ", shape_str(in[0].shape()), " does not match the padded shape");
    return std::vector<TensorMeta>{{s, in[0].dtype()}};
  };
  d.vjp = [](const VjpContext& c) { return TensorList{pad(c.grads[0], c.attrs.ints("pad"), c.attrs.s("mode"), 0.0)}; };
  return d;
}());

Tensor pad(const Tensor& x, const IntList& p, const std::string& mode, double value) {
  return dispatch1(OpId::Pad, {x}, {{"pad", p}, {"mode", mode}, {"value", value}});
}

}  // namespace lucid
