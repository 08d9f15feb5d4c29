// Copying movement ops: Cat, Flip, Roll, Tril, Triu, Repeat, Pad (+ PadBackward for the
// non-constant modes). Kernels are strided copies (mv::copy over computed views), so they
// are written once for every dtype; only filling a constant needs the dtype. stack is cat of
// unsqueezed inputs.
#include <algorithm>

#include "lucid/ops/movement.h"
#include "lucid/ops/movement_util.h"

namespace lucid {

static void fill_value(const Tensor& o, double v) {
  LUCID_DISPATCH_ALL(o.dtype(), "fill", [&] {
    scalar_t sv = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(v));
    cpu::StridedIter it({&o});
    it.for_each([sv](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<scalar_t*>(p[0] + i * s[0]) = sv;
    });
  });
}

// A view of x narrowed to [start, start + len) along dim (no autograd).
static Tensor narrow_view(const Tensor& x, int64_t dim, int64_t start, int64_t len) {
  Shape s = x.shape();
  s[dim] = len;
  return Tensor::make_view(x, s, x.strides(), x.offset() + (len > 0 ? start * x.strides()[dim] : 0));
}

static bool same_view(const Tensor& a, const Tensor& b) {
  return a.same_storage(b) && a.offset() == b.offset() && a.strides() == b.strides() && a.shape() == b.shape();
}

// ---- Cat ----------------------------------------------------------------------------------
// PyTorch still accepts 1-D empty tensors of shape [0] next to tensors of any rank: they are skipped.
static bool cat_skipped(const Tensor& t) { return t.ndim() == 1 && t.shape()[0] == 0; }

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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const Tensor& o = out[0];
    if (o.numel() == 0) return;
    int64_t dim = wrap_dim(a.i("dim"), o.ndim(), "cat");
    int64_t at = 0;
    for (const Tensor& t : in) {
      if (cat_skipped(t)) continue;
      int64_t n = t.shape()[dim];
      if (n > 0) mv::copy(narrow_view(o, dim, at, n), t);
      at += n;
    }
  };
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
static IntList unique_dims(const IntList& dims, int64_t nd, const char* op) {
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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const Tensor& x = in[0];
    Strides st = x.strides();
    int64_t off = x.offset();
    for (int64_t dd : unique_dims(a.ints("dims"), x.ndim(), "flip")) {
      if (x.ndim() == 0 || x.shape()[dd] == 0) continue;
      off += (x.shape()[dd] - 1) * st[dd];
      st[dd] = -st[dd];
    }
    Tensor v = Tensor::make_view(x, x.shape(), st, off);
    if (out[0].same_storage(x)) {
      Tensor t = Tensor::empty(x.shape(), x.dtype());
      mv::copy(t, v);
      v = t;
    }
    mv::copy(out[0], v);
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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const IntList& sh = a.ints("shifts");
    const IntList& dims = a.ints("dims");
    Tensor src = in[0];
    if (out[0].same_storage(src)) {  // in place: read from a copy
      src = Tensor::empty(src.shape(), src.dtype());
      mv::copy(src, in[0]);
    }
    for (size_t k = 0; k < dims.size(); ++k) {
      int64_t dd = wrap_dim(dims[k], src.ndim(), "roll");
      int64_t n = src.shape()[dd];
      Tensor dst = k + 1 == dims.size() ? out[0] : Tensor::empty(src.shape(), src.dtype());
      if (n == 0) { src = dst; continue; }
      int64_t s = ((sh[k] % n) + n) % n;
      if (n - s > 0) mv::copy(narrow_view(dst, dd, s, n - s), narrow_view(src, dd, 0, n - s));
      if (s > 0) mv::copy(narrow_view(dst, dd, 0, s), narrow_view(src, dd, n - s, s));
      src = dst;
    }
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
template <bool Lower>
static void tri_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  if (!same_view(o, in[0])) mv::copy(o, in[0]);
  int64_t k = a.i("diagonal");
  int64_t nd = o.ndim(), R = o.shape()[nd - 2], C = o.shape()[nd - 1];
  int64_t rs = o.strides()[nd - 2], cs = o.strides()[nd - 1];
  Shape bs(o.shape().begin(), o.shape().end() - 2);
  Strides bst(o.strides().begin(), o.strides().end() - 2);
  std::vector<int64_t> boff = mv::offset_table(bs, bst);
  mv::by_itemsize(o.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    U* base = static_cast<U*>(o.data_ptr());
    parallel_for(0, static_cast<int64_t>(boff.size()), std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(R * C, 1)),
                 [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b)
        for (int64_t r = 0; r < R; ++r) {
          U* row = base + boff[b] + r * rs;
          int64_t c0 = Lower ? std::clamp<int64_t>(r + k + 1, 0, C) : 0;
          int64_t c1 = Lower ? C : std::clamp<int64_t>(r + k, 0, C);
          for (int64_t c = c0; c < c1; ++c) row[c * cs] = U(0);
        }
    });
  });
}

static std::vector<TensorMeta> infer_tri(const TensorList& in, const Attrs&) {
  LUCID_CHECK(in[0].ndim() >= 2, ValueError, "tril/triu: input tensor must have at least 2 dimensions, got ",
              in[0].ndim());
  return {{in[0].shape(), in[0].dtype()}};
}

LUCID_REGISTER_OP(Tril, "diagonal:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = infer_tri;
  d.cpu_kernel = tri_kernel<true>;
  d.vjp = [](const VjpContext& c) { return TensorList{tril(c.grads[0], c.attrs.i("diagonal"))}; };
  return d;
}());

LUCID_REGISTER_OP(Triu, "diagonal:int", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = infer_tri;
  d.cpu_kernel = tri_kernel<false>;
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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const Tensor& x = in[0];
    const Tensor& o = out[0];
    if (o.numel() == 0) return;
    const IntList& r = a.ints("repeats");
    int64_t off = static_cast<int64_t>(r.size()) - x.ndim();
    Shape vs;
    Strides ost, xst;
    for (size_t i = 0; i < r.size(); ++i) {
      int64_t xi = static_cast<int64_t>(i) - off;
      int64_t s = xi < 0 ? 1 : x.shape()[xi];
      vs.push_back(r[i]); vs.push_back(s);
      ost.push_back(o.strides()[i] * s); ost.push_back(o.strides()[i]);
      xst.push_back(0); xst.push_back(xi < 0 ? 0 : x.strides()[xi]);
    }
    mv::copy(Tensor::make_view(o, vs, ost, o.offset()), Tensor::make_view(x, vs, xst, x.offset()));
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
    Tensor r = cast(reshape(repeats, {1}), DType::Int64);
    return repeat_interleave(x, *r.data<int64_t>(), dim, flat);
  }
  Tensor t = flat ? reshape(x, {-1}) : x;
  int64_t d = wrap_dim(flat ? 0 : dim, t.ndim(), "repeat_interleave");
  LUCID_CHECK(repeats.numel() == t.shape()[d], ValueError, "repeat_interleave: repeats has ", repeats.numel(),
              " values but dimension ", d, " has size ", t.shape()[d]);
  Tensor r = cast(repeats, DType::Int64);
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
  return index_select(t, d, idx);
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

// Source index of output position j in a dim of size n padded by l on the left.
static int64_t pad_source(const std::string& mode, int64_t j, int64_t n, int64_t l) {
  int64_t i = j - l;
  if (mode == "reflect") {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
    return i;
  }
  if (mode == "replicate") return std::clamp<int64_t>(i, 0, n - 1);
  return ((i % n) + n) % n;  // circular
}

static Tensor select_view(const Tensor& t, int64_t d, int64_t i) { return narrow_view(t, d, i, 1); }

LUCID_REGISTER_OP(Pad, "pad:ints, mode:str, value:float", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    return std::vector<TensorMeta>{{padded_shape(in[0].shape(), a.ints("pad"), a.s("mode")), in[0].dtype()}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const Tensor& o = out[0];
    const IntList& p = a.ints("pad");
    const std::string& mode = a.s("mode");
    int64_t nd = in[0].ndim();
    if (mode == "constant") {
      fill_value(o, a.f("value"));
      Tensor src = in[0], dst = o;
      for (size_t k = 0; k < p.size() / 2; ++k) {
        int64_t dd = nd - 1 - static_cast<int64_t>(k), l = p[2 * k];
        int64_t n = src.shape()[dd], m = dst.shape()[dd];
        int64_t is = std::max<int64_t>(0, -l), os = std::max<int64_t>(0, l);
        int64_t len = std::max<int64_t>(0, std::min(n - is, m - os));
        src = narrow_view(src, dd, is, len);
        dst = narrow_view(dst, dd, os, len);
      }
      if (src.numel() > 0) mv::copy(dst, src);
      return;
    }
    // One padded dim at a time, each output slice copied from its source slice.
    Tensor cur = in[0];
    for (size_t k = 0; k < p.size() / 2; ++k) {
      int64_t dd = nd - 1 - static_cast<int64_t>(k), l = p[2 * k], r = p[2 * k + 1];
      if (l == 0 && r == 0) continue;
      Shape s = cur.shape();
      int64_t n = s[dd];
      s[dd] = n + l + r;
      Tensor next = Tensor::empty(s, cur.dtype());
      mv::copy(narrow_view(next, dd, l, n), cur);
      for (int64_t j = 0; j < s[dd]; ++j)
        if (j < l || j >= l + n) mv::copy(select_view(next, dd, j), select_view(cur, dd, pad_source(mode, j, n, l)));
      cur = next;
    }
    mv::copy(o, cur);
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
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs& a) {
    const IntList& p = a.ints("pad");
    const std::string& mode = a.s("mode");
    int64_t nd = in[0].ndim();
    Tensor cur = in[0];
    for (int64_t k = static_cast<int64_t>(p.size() / 2) - 1; k >= 0; --k) {
      int64_t dd = nd - 1 - k, l = p[2 * k], r = p[2 * k + 1];
      if (l == 0 && r == 0) continue;
      Shape s = cur.shape();
      int64_t n = s[dd] - l - r;
      s[dd] = n;
      Tensor next = Tensor::empty(s, cur.dtype());
      mv::copy(next, narrow_view(cur, dd, l, n));
      for (int64_t j = 0; j < cur.shape()[dd]; ++j)
        if (j < l || j >= l + n) mv::add_into(select_view(next, dd, pad_source(mode, j, n, l)), select_view(cur, dd, j));
      cur = next;
    }
    mv::copy(out[0], cur);
  };
  d.vjp = [](const VjpContext& c) { return TensorList{pad(c.grads[0], c.attrs.ints("pad"), c.attrs.s("mode"), 0.0)}; };
  return d;
}());

Tensor pad(const Tensor& x, const IntList& p, const std::string& mode, double value) {
  return dispatch1(OpId::Pad, {x}, {{"pad", p}, {"mode", mode}, {"value", value}});
}

}  // namespace lucid
