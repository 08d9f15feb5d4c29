// Core ops the VJPs of every family are written with: Copy (cast/clone; copy_ with PyTorch's
// overlap checks), the views Expand, Reshape and Permute (transpose), the arithmetic Add, Sub,
// Mul, Div, Neg, and Fill (values checked against the dtype's range). Add/Mul/Neg are the worked
// examples of elementwise ops (docs/adding_an_op.md). The core reductions (Sum, SumTo) are in
// core_sum.cpp; the CPU kernels of Copy and Fill in backends/cpu/kernels/core.cpp.
#include "lucid/ops/core.h"

#include <algorithm>
#include <cmath>

#include "lucid/compile/trace/trace_hook.h"
#include "lucid/core/mem_overlap.h"
#include "lucid/ops/elementwise_util.h"
#include "lucid/ops/scalar_functors.h"
#include "lucid/ops/view_util.h"

namespace lucid {

// ---- Copy ---------------------------------------------------------------------------------
// non_blocking (copy_(src, non_blocking=True)): a copy between host and device may return before
// it has finished where the host memory allows it (pinned), as torch's.
LUCID_REGISTER_OP(Copy, "dtype:dtype, non_blocking:bool?", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    return std::vector<TensorMeta>{{in[0].shape(), a.dtype("dtype")}};
  };
  d.vjp = [](const VjpContext& c) { return TensorList{c.grads[0]}; };  // engine casts back
  return d;
}());

Tensor cast(const Tensor& x, DType dtype) { return dispatch1(OpId::Copy, {x}, {{"dtype", dtype}}); }

// ---- ToDevice -----------------------------------------------------------------------------
// A copy onto another device (converted to `dtype`); its gradient goes back to the input's
// device. non_blocking: the kernel may return before a device-to-host copy into pinned memory
// has finished (the caller synchronises), as torch's to(..., non_blocking=True).
LUCID_REGISTER_OP(ToDevice, "device:str, dtype:dtype, non_blocking:bool", [] {
  OpDef d;
  d.num_inputs = 1;
  d.device_transfer = true;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const std::string& spec = a.s("device");
    Device dev = parse_device(spec);
    check_available(dev, spec);
    return std::vector<TensorMeta>{{in[0].shape(), a.dtype("dtype"), dev}};
  };
  d.vjp = [](const VjpContext& c) {
    const TensorMeta& m = c.input_meta[0];
    return TensorList{to_device(c.grads[0], m.device, m.dtype)};
  };
  return d;
}());

Tensor to_device(const Tensor& x, const Device& device, DType dtype, bool non_blocking) {
  return dispatch1(OpId::ToDevice, {x}, {{"device", device.str()}, {"dtype", dtype}, {"non_blocking", non_blocking}});
}

Tensor host_copy(const Tensor& x) {
  if (x.device().is_cpu()) return x.contiguous_data();
  Tensor h = Tensor::empty(x.shape(), x.dtype());
  copy_values(h, x);
  return h;
}

Tensor on_device(const Tensor& t, const Device& d) {
  if (t.device() == d) return t;
  Tensor r = Tensor::empty(t.shape(), t.dtype(), d);
  copy_values(r, t);
  return r;
}

const Tensor& copy_(const Tensor& dst, const Tensor& src, bool non_blocking) {
  if (src.same_storage(dst)) {
    // Same data (as PyTorch, which then returns before any check): nothing to write.
    if (src.offset() == dst.offset() && src.shape() == dst.shape() && src.strides() == dst.strides() &&
        src.dtype() == dst.dtype() && !src.requires_grad() && !dst.requires_grad()) {
      // A trace still records the write: it relied on dst and src being one memory, which later
      // calls may not share (the executable then copies as eager would, or raises).
      if (TraceHook* h = current_trace_hook()) h->on_inplace(OpId::Copy, {dst}, {src}, {{"dtype", dst.dtype()}}, Tensor());
      return dst;
    }
    // PyTorch's check sees src as given: broadcast to dst's shape, its geometry would be hidden
    // (dispatch_inplace then copies an aliasing broadcast src first).
    assert_no_partial_overlap(dst, src, "copy_");
  }
  Attrs attrs{{"dtype", dst.dtype()}};
  if (non_blocking) attrs.set("non_blocking", true);  // only then: a CPU copy's attributes stay as they were
  return dispatch_inplace(OpId::Copy, dst, {expand(src, dst.shape())}, attrs);
}

// ---- Expand -------------------------------------------------------------------------------
LUCID_REGISTER_OP(Expand, "shape:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    Shape target = a.ints("shape");
    int64_t nd = static_cast<int64_t>(target.size());
    LUCID_CHECK(nd >= x.ndim(), ValueError, "expand: argument 'size' has ", nd,
                " dims, fewer than the tensor's ", x.ndim());
    Strides st(nd, 0);
    int64_t off = nd - x.ndim();
    for (int64_t i = 0; i < nd; ++i) {
      int64_t xi = i - off;
      if (target[i] == -1) {
        LUCID_CHECK(xi >= 0, ValueError, "expand: -1 is not allowed in a new leading dim");
        target[i] = x.shape()[xi];
      }
      if (xi < 0) continue;
      int64_t xs = x.shape()[xi];
      LUCID_CHECK(xs == target[i] || xs == 1, ValueError, "expand: the expanded size ", target[i],
                  " must match the existing size ", xs, " at non-singleton dim ", i, " (shape ",
                  shape_str(x.shape()), " to ", shape_str(target), ")");
      st[i] = xs == 1 && target[i] != 1 ? 0 : x.strides()[xi];
    }
    return TensorList{Tensor::make_view(x, target, st, x.offset())};
  };
  d.vjp = [](const VjpContext& c) { return TensorList{sum_to(c.grads[0], c.input_meta[0].shape)}; };
  return d;
}());

Tensor expand(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return dispatch1(OpId::Expand, {x}, {{"shape", shape}});
}

// ---- Reshape ------------------------------------------------------------------------------
Shape infer_reshape_shape(const char* op, const Shape& from, IntList to) {
  int64_t n = numel_of(from), known = 1, infer_at = -1;
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i] == -1) {
      LUCID_CHECK(infer_at < 0, ValueError, op, ": only one dimension can be inferred (-1), got ", shape_str(to));
      infer_at = static_cast<int64_t>(i);
    } else {
      LUCID_CHECK(to[i] >= 0, ValueError, op, ": invalid size ", to[i], " in ", shape_str(to));
      known = checked_mul(known, to[i], op);
    }
  }
  if (infer_at >= 0) {
    LUCID_CHECK(known != 0 && n % known == 0, ValueError, op, ": shape ", shape_str(to),
                " is invalid for input of size ", n);
    to[infer_at] = n / known;
  }
  LUCID_CHECK(numel_of(to) == n, ValueError, op, ": shape ", shape_str(to), " is invalid for input of size ", n,
              " (shape ", shape_str(from), ")");
  return to;
}

bool view_strides(const Tensor& x, const Shape& shape, Strides& out) {
  const Shape& os = x.shape();
  const Strides& ost = x.strides();
  out.assign(shape.size(), 0);
  if (x.numel() == 0) { out = contiguous_strides(shape); return true; }
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = ost.empty() ? 1 : ost.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = static_cast<int64_t>(os.size()) - 1; td >= 0; --td) {
    tensor_numel *= os[td];
    if (td == 0 || (os[td - 1] != 1 && ost[td - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (td > 0) {
        chunk_base_stride = ost[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) {
    for (; view_d >= 0; --view_d) { if (shape[view_d] != 1) return false; out[view_d] = 1; }
  }
  return true;
}

LUCID_REGISTER_OP(Reshape, "shape:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    Shape shape = infer_reshape_shape("reshape", x.shape(), a.ints("shape"));
    Strides st;
    if (view_strides(x, shape, st)) return TensorList{Tensor::make_view(x, shape, st, x.offset())};
    Tensor c = x.contiguous_data();
    return TensorList{Tensor::make_view(c, shape, contiguous_strides(shape), c.offset())};
  };
  d.vjp = [](const VjpContext& c) { return TensorList{reshape(c.grads[0], c.input_meta[0].shape)}; };
  return d;
}());

Tensor reshape(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return dispatch1(OpId::Reshape, {x}, {{"shape", shape}});
}

// ---- Permute ------------------------------------------------------------------------------
static IntList inverse_perm(const IntList& p) {
  IntList inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) inv[p[i]] = static_cast<int64_t>(i);
  return inv;
}

LUCID_REGISTER_OP(Permute, "dims:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.lowering = Lowering::View;
  d.view = [](const TensorList& in, const Attrs& a) {
    const Tensor& x = in[0];
    const IntList& dims = a.ints("dims");
    LUCID_CHECK(static_cast<int64_t>(dims.size()) == x.ndim(), ValueError, "permute: argument 'dims' expected ",
                x.ndim(), " dims, got ", dims.size());
    Shape s(dims.size());
    Strides st(dims.size());
    std::vector<bool> seen(dims.size(), false);
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t dd = wrap_dim(dims[i], x.ndim(), "permute");
      LUCID_CHECK(!seen[dd], ValueError, "permute: argument 'dims' has dim ", dd, " more than once");
      seen[dd] = true;
      s[i] = x.shape()[dd];
      st[i] = x.strides()[dd];
    }
    return TensorList{Tensor::make_view(x, s, st, x.offset())};
  };
  d.vjp = [](const VjpContext& c) {
    IntList dims = c.attrs.ints("dims");
    int64_t n = static_cast<int64_t>(dims.size());
    for (auto& v : dims) v = v < 0 ? v + n : v;
    return TensorList{permute(c.grads[0], inverse_perm(dims))};
  };
  return d;
}());

Tensor permute(const Tensor& x, const IntList& dims) { return dispatch1(OpId::Permute, {x}, {{"dims", dims}}); }

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  int64_t n = x.ndim();
  if (n < 2 && x.ndim() <= 1) {
    wrap_dim(d0, n, "transpose");
    wrap_dim(d1, n, "transpose");
    return x;
  }
  d0 = wrap_dim(d0, n, "transpose");
  d1 = wrap_dim(d1, n, "transpose");
  IntList p(n);
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  std::swap(p[d0], p[d1]);
  return permute(x, p);
}

// ---- Add, Sub, Mul, Div, Neg --------------------------------------------------------------
LUCID_REGISTER_OP(Add, "", [] {
  OpDef d = elementwise_op<OpId::Add>();
  d.vjp = [](const VjpContext& c) { return TensorList{c.grads[0], c.grads[0]}; };
  return d;
}());

LUCID_REGISTER_OP(Mul, "", [] {
  OpDef d = elementwise_op<OpId::Mul>();
  d.float_scalar_input = 1;
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    TensorList r(2);
    if (c.needs_grad[0]) r[0] = mul(g, c.inputs[1]);
    if (c.needs_grad[1]) r[1] = mul(g, c.inputs[0]);
    return r;
  };
  return d;
}());

LUCID_REGISTER_OP(Neg, "", [] {
  OpDef d = elementwise_op<OpId::Neg>();
  d.vjp = [](const VjpContext& c) { return TensorList{neg(c.grads[0])}; };
  return d;
}());

LUCID_REGISTER_OP(Sub, "", [] {
  OpDef d = elementwise_op<OpId::Sub>();
  d.vjp = [](const VjpContext& c) { return TensorList{c.grads[0], c.needs_grad[1] ? neg(c.grads[0]) : Tensor()}; };
  return d;
}());

LUCID_REGISTER_OP(Div, "", [] {
  OpDef d = elementwise_op<OpId::Div>();
  d.float_scalar_input = 1;
  d.save = kSaveInputs;
  d.vjp = [](const VjpContext& c) {
    const Tensor& g = c.grads[0];
    TensorList r(2);
    if (c.needs_grad[0]) r[0] = div(g, c.inputs[1]);
    if (c.needs_grad[1]) r[1] = neg(div(mul(g, c.inputs[0]), mul(c.inputs[1], c.inputs[1])));
    return r;
  };
  return d;
}());

Tensor add(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Add, {a, b}); }
Tensor sub(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Sub, {a, b}); }
Tensor mul(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Mul, {a, b}); }
Tensor div(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Div, {a, b}); }
Tensor neg(const Tensor& x) { return dispatch1(OpId::Neg, {x}); }
Tensor mul_scalar(const Tensor& a, double s) { return mul(a, scalar_tensor(s)); }

// ---- Fill ---------------------------------------------------------------------------------
// Fill writes a scalar into its output. Out of place it takes the shape and dtype attributes;
// fill_ / zero_ are its in-place form (inputs empty, destination given).
LUCID_REGISTER_OP(Fill, "value:float, shape:ints?, dtype:dtype?", [] {
  OpDef d;
  d.num_inputs = 0;
  d.differentiable = false;
  d.infer = [](const TensorList&, const Attrs& a) {
    const DType dt = a.has("dtype") ? a.dtype("dtype") : DType::Float32;
    const double v = a.f("value");
    check_scalar_fits(v, dt, "fill");
    return std::vector<TensorMeta>{{a.has("shape") ? a.ints("shape") : Shape{}, dt}};
  };
  return d;
}());

const Tensor& fill_(const Tensor& x, double value) {
  return dispatch_inplace(OpId::Fill, x, {}, {{"value", value}, {"shape", x.shape()}, {"dtype", x.dtype()}});
}

Tensor full(const Shape& shape, double value, DType dtype) {
  return dispatch1(OpId::Fill, {}, {{"value", value}, {"shape", shape}, {"dtype", dtype}});
}
Tensor zeros_like(const Tensor& x) {
  FactoryDeviceScope on(x.device());
  return full(x.shape(), 0.0, x.dtype());
}
Tensor ones_like(const Tensor& x) {
  FactoryDeviceScope on(x.device());
  return full(x.shape(), 1.0, x.dtype());
}

}  // namespace lucid
