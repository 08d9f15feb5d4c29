// The movement family's copying kernels, written once for every backend: Flip, Roll, Repeat, Pad,
// PadBackward (records in ops/movement_copy.cpp), the scatters behind the views' VJPs
// (SliceScatter, DiagonalBackward, UnfoldBackward: ops/movement_views.cpp) and AsStridedScatter
// (ops/core_strided.cpp). Each is host code that builds views (shape, strides, offset) from the
// record's geometry (movement_util.h, view_util.h) and moves data between them with four
// primitives of the backend, the template parameter M:
//   M::copy(dst, src)   dst = src, src broadcast to dst (same dtype: moves by item size; else the
//                        converting copy)
//   M::add(dst, src)    dst += src elementwise (src broadcast to dst)
//   M::fill(dst, v)     every element of dst = v, converted to dst's dtype
//   M::zero(dst)        dst (contiguous) = 0
// (cpu::CpuMoves in backends/cpu/strided_copy.h, cuda::CudaMoves in backends/cuda/strided_move.h).
// Scratch tensors are made on the output's device. The accumulations (PadBackward,
// UnfoldBackward) add one slice or window at a time in a fixed order, so every backend gives the
// CPU's bits. A backend registers them all with LUCID_REGISTER_MOVEMENT_PLAN(device, M) in its
// movement kernels' file. Cat and Tril/Triu have backend-specific fast paths and stay in the
// backends. Host-only; nvcc compiles it as part of backends/cuda/kernels/movement.cu.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "lucid/ops/attrs.h"
#include "lucid/ops/movement_util.h"
#include "lucid/ops/op_def.h"
#include "lucid/ops/view_util.h"

namespace lucid::movement_plan {

// A view of t at index i of dim d, keeping the dim (size 1).
inline Tensor select_view(const Tensor& t, int64_t d, int64_t i) { return narrow_view(t, d, i, 1); }

// src itself, or a scratch copy when it shares dst's storage (x[a] = x[b]: read before writing).
template <class M>
Tensor unaliased(const Tensor& src, const Tensor& dst) {
  if (!src.same_storage(dst)) return src;
  Tensor t = Tensor::empty(src.shape(), src.dtype(), src.device());
  M::copy(t, src);
  return t;
}

// ---- Flip / Roll --------------------------------------------------------------------------------
// A view of x with the flipped dims' strides negated (read from a copy when in place).
template <class M>
void flip(const TensorList& in, const TensorList& out, const Attrs& a) {
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
    Tensor t = Tensor::empty(x.shape(), x.dtype(), x.device());
    M::copy(t, v);
    v = t;
  }
  M::copy(out[0], v);
}

// One rolled dim at a time, each as two narrowed copies.
template <class M>
void roll(const TensorList& in, const TensorList& out, const Attrs& a) {
  const IntList& sh = a.ints("shifts");
  const IntList& dims = a.ints("dims");
  Tensor src = in[0];
  if (out[0].same_storage(src)) {  // in place: read from a copy
    src = Tensor::empty(src.shape(), src.dtype(), src.device());
    M::copy(src, in[0]);
  }
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t dd = wrap_dim(dims[k], src.ndim(), "roll");
    int64_t n = src.shape()[dd];
    Tensor dst = k + 1 == dims.size() ? out[0] : Tensor::empty(src.shape(), src.dtype(), src.device());
    if (n == 0) { src = dst; continue; }
    int64_t s = ((sh[k] % n) + n) % n;
    if (n - s > 0) M::copy(narrow_view(dst, dd, s, n - s), narrow_view(src, dd, 0, n - s));
    if (s > 0) M::copy(narrow_view(dst, dd, 0, s), narrow_view(src, dd, n - s, s));
    src = dst;
  }
}

// ---- Repeat -------------------------------------------------------------------------------------
// The output seen as [r0, s0, r1, s1, ...] (repeat count, input size per dim) and the input
// broadcast over the repeat dims: one strided copy.
template <class M>
void repeat(const TensorList& in, const TensorList& out, const Attrs& a) {
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
  M::copy(Tensor::make_view(o, vs, ost, o.offset()), Tensor::make_view(x, vs, xst, x.offset()));
}

// ---- Pad / PadBackward --------------------------------------------------------------------------
// "constant": fill, then one copy of the overlap (negative pads crop). Other modes: one padded dim
// at a time, each output slice copied from its source slice (pad_source; pads are a few elements
// wide, so a copy per slice).
template <class M>
void pad(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  const IntList& p = a.ints("pad");
  const std::string& mode = a.s("mode");
  int64_t nd = in[0].ndim();
  if (mode == "constant") {
    M::fill(o, a.f("value"));
    Tensor src = in[0], dst = o;
    for (size_t k = 0; k < p.size() / 2; ++k) {
      int64_t dd = nd - 1 - static_cast<int64_t>(k), l = p[2 * k];
      int64_t n = src.shape()[dd], m = dst.shape()[dd];
      int64_t is = std::max<int64_t>(0, -l), os = std::max<int64_t>(0, l);
      int64_t len = std::max<int64_t>(0, std::min(n - is, m - os));
      src = narrow_view(src, dd, is, len);
      dst = narrow_view(dst, dd, os, len);
    }
    if (src.numel() > 0) M::copy(dst, src);
    return;
  }
  Tensor cur = in[0];
  for (size_t k = 0; k < p.size() / 2; ++k) {
    int64_t dd = nd - 1 - static_cast<int64_t>(k), l = p[2 * k], r = p[2 * k + 1];
    if (l == 0 && r == 0) continue;
    Shape s = cur.shape();
    int64_t n = s[dd];
    s[dd] = n + l + r;
    Tensor next = Tensor::empty(s, cur.dtype(), o.device());
    M::copy(narrow_view(next, dd, l, n), cur);
    for (int64_t j = 0; j < s[dd]; ++j)
      if (j < l || j >= l + n) M::copy(select_view(next, dd, j), select_view(cur, dd, pad_source(mode, j, n, l)));
    cur = next;
  }
  M::copy(o, cur);
}

// Every output gradient slice is added to its source slice, dims in the reverse of pad's order.
template <class M>
void pad_backward(const TensorList& in, const TensorList& out, const Attrs& a) {
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
    Tensor next = Tensor::empty(s, cur.dtype(), out[0].device());
    M::copy(next, narrow_view(cur, dd, l, n));
    for (int64_t j = 0; j < cur.shape()[dd]; ++j)
      if (j < l || j >= l + n) M::add(select_view(next, dd, pad_source(mode, j, n, l)), select_view(cur, dd, j));
    cur = next;
  }
  M::copy(out[0], cur);
}

// ---- SliceScatter / DiagonalBackward / UnfoldBackward / AsStridedScatter ------------------------
template <class M>
void slice_scatter(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  bool inplace = o.same_storage(in[0]) && o.offset() == in[0].offset() && o.strides() == in[0].strides();
  Tensor src = unaliased<M>(in[1], o);
  if (!inplace) M::copy(o, in[0]);
  SliceSpec s = normalize_slice(o.shape(), a, "slice_scatter");
  M::copy(slice_region(o, s), src);
}

template <class M>
void diagonal_backward(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  M::zero(o);
  M::copy(diagonal_view(o, a.i("offset"), a.i("dim1"), a.i("dim2")), in[0]);
}

// Sums each window of the gradient back into its input positions (the adjoint of Unfold): window
// offset k of every window at once, as a view over the input's dims (window index along `dim`).
template <class M>
void unfold_backward(const TensorList& in, const TensorList& out, const Attrs& a) {
  const Tensor& o = out[0];
  M::zero(o);
  int64_t dim = a.i("dim"), size = a.i("size"), step = a.i("step");
  check_unfold(o.shape(), dim, size, step);
  const Tensor& g = in[0];
  if (o.ndim() == 0) { M::copy(o, Tensor::make_view(g, {}, {}, g.offset())); return; }
  int64_t nw = g.shape()[dim];
  for (int64_t k = 0; k < size; ++k) {
    Shape gs(g.shape().begin(), g.shape().end() - 1);
    Strides gst(g.strides().begin(), g.strides().end() - 1);
    Tensor gk = Tensor::make_view(g, gs, gst, g.offset() + k * g.strides().back());
    Shape os = o.shape();
    Strides ost = o.strides();
    os[dim] = nw;
    ost[dim] *= step;
    Tensor ok = Tensor::make_view(o, os, ost, o.offset() + k * o.strides()[dim]);
    M::add(ok, gk);
  }
}

template <class M>
void as_strided_scatter(const TensorList& in, const TensorList& out, const Attrs& a) {
  Tensor src = unaliased<M>(in[1], out[0]);
  if (!same_view(out[0], in[0])) M::copy(out[0], in[0]);
  M::copy(strided_region(out[0], a), src);
}

}  // namespace lucid::movement_plan

// The kernels above as `device`'s kernels of their ops, on the primitives M.
#define LUCID_REGISTER_MOVEMENT_PLAN(device, M)                                                    \
  LUCID_REGISTER_KERNEL(Flip, device, ::lucid::movement_plan::flip<M>);                             \
  LUCID_REGISTER_KERNEL(Roll, device, ::lucid::movement_plan::roll<M>);                             \
  LUCID_REGISTER_KERNEL(Repeat, device, ::lucid::movement_plan::repeat<M>);                         \
  LUCID_REGISTER_KERNEL(Pad, device, ::lucid::movement_plan::pad<M>);                               \
  LUCID_REGISTER_KERNEL(PadBackward, device, ::lucid::movement_plan::pad_backward<M>);              \
  LUCID_REGISTER_KERNEL(SliceScatter, device, ::lucid::movement_plan::slice_scatter<M>);            \
  LUCID_REGISTER_KERNEL(DiagonalBackward, device, ::lucid::movement_plan::diagonal_backward<M>);    \
  LUCID_REGISTER_KERNEL(UnfoldBackward, device, ::lucid::movement_plan::unfold_backward<M>);        \
  LUCID_REGISTER_KERNEL(AsStridedScatter, device, ::lucid::movement_plan::as_strided_scatter<M>)
