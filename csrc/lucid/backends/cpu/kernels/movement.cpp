// CPU kernels of the movement family's copying ops: Cat, Flip, Roll, Tril, Triu, Repeat, Pad,
// PadBackward (records in ops/movement_copy.cpp) and the scatters behind the views' VJPs:
// SliceScatter, DiagonalBackward, UnfoldBackward (records in ops/movement_views.cpp). Each is a
// strided copy (cpu::strided_copy) or accumulation between views computed from the record's
// geometry (ops/movement_util.h), so it is written once for every dtype; only filling a
// constant needs the dtype.
#include <algorithm>
#include <cstring>

#include "lucid/backends/cpu/strided_copy.h"
#include "lucid/ops/movement_util.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

// ---- Cat ----------------------------------------------------------------------------------
void cat_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  if (o.numel() == 0) return;
  int64_t dim = wrap_dim(a.i("dim"), o.ndim(), "cat");
  int64_t at = 0;
  for (const Tensor& t : in) {
    if (cat_skipped(t)) continue;
    int64_t n = t.shape()[dim];
    if (n > 0) strided_copy(narrow_view(o, dim, at, n), t);
    at += n;
  }
}

// ---- Flip ---------------------------------------------------------------------------------
void flip_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
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
    strided_copy(t, v);
    v = t;
  }
  strided_copy(out[0], v);
}

// ---- Roll ---------------------------------------------------------------------------------
void roll_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const IntList& sh = a.ints("shifts");
  const IntList& dims = a.ints("dims");
  Tensor src = in[0];
  if (out[0].same_storage(src)) {  // in place: read from a copy
    src = Tensor::empty(src.shape(), src.dtype());
    strided_copy(src, in[0]);
  }
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t dd = wrap_dim(dims[k], src.ndim(), "roll");
    int64_t n = src.shape()[dd];
    Tensor dst = k + 1 == dims.size() ? out[0] : Tensor::empty(src.shape(), src.dtype());
    if (n == 0) { src = dst; continue; }
    int64_t s = ((sh[k] % n) + n) % n;
    if (n - s > 0) strided_copy(narrow_view(dst, dd, s, n - s), narrow_view(src, dd, 0, n - s));
    if (s > 0) strided_copy(narrow_view(dst, dd, 0, s), narrow_view(src, dd, n - s, s));
    src = dst;
  }
}

// ---- Tril / Triu --------------------------------------------------------------------------
template <bool Lower>
void tri_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  if (!same_view(o, in[0])) strided_copy(o, in[0]);
  int64_t k = a.i("diagonal");
  int64_t nd = o.ndim(), R = o.shape()[nd - 2], C = o.shape()[nd - 1];
  int64_t rs = o.strides()[nd - 2], cs = o.strides()[nd - 1];
  Shape bs(o.shape().begin(), o.shape().end() - 2);
  Strides bst(o.strides().begin(), o.strides().end() - 2);
  std::vector<int64_t> boff = offset_table(bs, bst);
  by_itemsize(o.dtype(), [&](auto tag) {
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

// ---- Repeat -------------------------------------------------------------------------------
void repeat_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
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
  strided_copy(Tensor::make_view(o, vs, ost, o.offset()), Tensor::make_view(x, vs, xst, x.offset()));
}

// ---- Pad / PadBackward --------------------------------------------------------------------
Tensor select_view(const Tensor& t, int64_t d, int64_t i) { return narrow_view(t, d, i, 1); }

void pad_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  const IntList& p = a.ints("pad");
  const std::string& mode = a.s("mode");
  int64_t nd = in[0].ndim();
  if (mode == "constant") {
    fill(o, a.f("value"));
    Tensor src = in[0], dst = o;
    for (size_t k = 0; k < p.size() / 2; ++k) {
      int64_t dd = nd - 1 - static_cast<int64_t>(k), l = p[2 * k];
      int64_t n = src.shape()[dd], m = dst.shape()[dd];
      int64_t is = std::max<int64_t>(0, -l), os = std::max<int64_t>(0, l);
      int64_t len = std::max<int64_t>(0, std::min(n - is, m - os));
      src = narrow_view(src, dd, is, len);
      dst = narrow_view(dst, dd, os, len);
    }
    if (src.numel() > 0) strided_copy(dst, src);
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
    strided_copy(narrow_view(next, dd, l, n), cur);
    for (int64_t j = 0; j < s[dd]; ++j)
      if (j < l || j >= l + n) strided_copy(select_view(next, dd, j), select_view(cur, dd, pad_source(mode, j, n, l)));
    cur = next;
  }
  strided_copy(o, cur);
}

// Every output gradient slice is added to its source slice.
void pad_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
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
    strided_copy(next, narrow_view(cur, dd, l, n));
    for (int64_t j = 0; j < cur.shape()[dd]; ++j)
      if (j < l || j >= l + n) add_into(select_view(next, dd, pad_source(mode, j, n, l)), select_view(cur, dd, j));
    cur = next;
  }
  strided_copy(out[0], cur);
}

// ---- SliceScatter / DiagonalBackward / UnfoldBackward -------------------------------------
void slice_scatter_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  bool inplace = o.same_storage(in[0]) && o.offset() == in[0].offset() && o.strides() == in[0].strides();
  Tensor src = in[1];
  if (src.same_storage(o)) {  // x[a] = x[b]: read the source before writing
    Tensor t = Tensor::empty(src.shape(), src.dtype());
    strided_copy(t, src);
    src = t;
  }
  if (!inplace) strided_copy(o, in[0]);
  SliceSpec s = normalize_slice(o.shape(), a, "slice_scatter");
  strided_copy(slice_region(o, s), src);
}

void diagonal_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  std::memset(o.data_ptr(), 0, o.numel() * itemsize(o.dtype()));
  strided_copy(diagonal_view(o, a.i("offset"), a.i("dim1"), a.i("dim2")), in[0]);
}

// Sums each window of the gradient back into its input positions (the adjoint of Unfold).
void unfold_backward_kernel(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  std::memset(o.data_ptr(), 0, o.numel() * itemsize(o.dtype()));
  int64_t dim = a.i("dim"), size = a.i("size"), step = a.i("step");
  check_unfold(o.shape(), dim, size, step);
  const Tensor& g = in[0];
  if (o.ndim() == 0) { strided_copy(o, Tensor::make_view(g, {}, {}, g.offset())); return; }
  int64_t nw = g.shape()[dim];
  // Window k of the gradient as a view over the input's dims (window index along `dim`).
  for (int64_t k = 0; k < size; ++k) {
    Shape gs(g.shape().begin(), g.shape().end() - 1);
    Strides gst(g.strides().begin(), g.strides().end() - 1);
    Tensor gk = Tensor::make_view(g, gs, gst, g.offset() + k * g.strides().back());
    Shape os = o.shape();
    Strides ost = o.strides();
    os[dim] = nw;
    ost[dim] *= step;
    Tensor ok = Tensor::make_view(o, os, ost, o.offset() + k * o.strides()[dim]);
    add_into(ok, gk);
  }
}

}  // namespace

LUCID_REGISTER_KERNEL(Cat, CPU, cat_kernel);
LUCID_REGISTER_KERNEL(Flip, CPU, flip_kernel);
LUCID_REGISTER_KERNEL(Roll, CPU, roll_kernel);
LUCID_REGISTER_KERNEL(Tril, CPU, tri_kernel<true>);
LUCID_REGISTER_KERNEL(Triu, CPU, tri_kernel<false>);
LUCID_REGISTER_KERNEL(Repeat, CPU, repeat_kernel);
LUCID_REGISTER_KERNEL(Pad, CPU, pad_kernel);
LUCID_REGISTER_KERNEL(PadBackward, CPU, pad_backward_kernel);
LUCID_REGISTER_KERNEL(SliceScatter, CPU, slice_scatter_kernel);
LUCID_REGISTER_KERNEL(DiagonalBackward, CPU, diagonal_backward_kernel);
LUCID_REGISTER_KERNEL(UnfoldBackward, CPU, unfold_backward_kernel);

}  // namespace lucid::cpu
