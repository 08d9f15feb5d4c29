// Core ops: Copy (cast/clone; copy_ with PyTorch's overlap checks), SumTo (reduce a broadcast
// gradient), Expand, Reshape, Add, Mul, Neg, Fill (values checked against the dtype's range).
// Add/Mul/Neg are the worked examples of elementwise ops (docs/adding_an_op.md).
#include "lucid/ops/core.h"

#include <cmath>

#include "lucid/backends/cpu/loops.h"
#include "lucid/compile/trace/trace_hook.h"
#include "lucid/core/mem_overlap.h"
#include "lucid/ops/elementwise_util.h"
#include "lucid/ops/reduce.h"
#include "lucid/ops/scalar_functors.h"
#include "lucid/ops/view_util.h"

namespace lucid {

// ---- Copy ---------------------------------------------------------------------------------
LUCID_REGISTER_OP(Copy, "dtype:dtype", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    return std::vector<TensorMeta>{{in[0].shape(), a.dtype("dtype")}};
  };
  d.cpu_kernel = [](const TensorList& in, const TensorList& out, const Attrs&) { cpu::copy_into(out[0], in[0]); };
  d.vjp = [](const VjpContext& c) { return TensorList{c.grads[0]}; };  // engine casts back
  return d;
}());

Tensor cast(const Tensor& x, DType dtype) { return dispatch1(OpId::Copy, {x}, {{"dtype", dtype}}); }

const Tensor& copy_(const Tensor& dst, const Tensor& src) {
  if (src.same_storage(dst)) {
    // Same data (as PyTorch, which then returns before any check): nothing to write.
    if (src.offset() == dst.offset() && src.shape() == dst.shape() && src.strides() == dst.strides() &&
        src.dtype() == dst.dtype() && !src.requires_grad() && !dst.requires_grad()) {
      // A trace still records the write: it relied on dst and src being one memory, which later
      // calls may not share (the executable then copies as eager would, or raises).
      if (TraceHook* h = current_trace_hook()) h->on_inplace(OpId::Copy, dst, {src}, {{"dtype", dst.dtype()}}, Tensor());
      return dst;
    }
    // PyTorch's check sees src as given: broadcast to dst's shape, its geometry would be hidden
    // (dispatch_inplace then copies an aliasing broadcast src first).
    assert_no_partial_overlap(dst, src, "copy_");
  }
  return dispatch_inplace(OpId::Copy, dst, {expand(src, dst.shape())}, {{"dtype", dst.dtype()}});
}

// ---- SumTo --------------------------------------------------------------------------------
// The broadcast dims of x relative to the target shape: leading extra dims, and dims where the
// target has size 1 and x does not. The shared row-reduction driver does the summing.
static void sum_to_kernel(const TensorList& in, const TensorList& out, const Attrs&) {
  const Tensor& x = in[0];
  const Shape& target = out[0].shape();
  int64_t lead = x.ndim() - static_cast<int64_t>(target.size());
  IntList dims;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d < lead || (target[d - lead] == 1 && x.shape()[d] != 1)) dims.push_back(d);
  if (dims.empty()) {
    cpu::copy_into(out[0], x);
    return;
  }
  reduce_sum_into(x, dims, out[0]);
}

LUCID_REGISTER_OP(SumTo, "shape:ints", [] {
  OpDef d;
  d.num_inputs = 1;
  d.infer = [](const TensorList& in, const Attrs& a) {
    const Shape& s = a.ints("shape");
    // s must broadcast to the input's shape.
    Shape b = broadcast_shapes(s, in[0].shape(), "sum_to");
    LUCID_CHECK(b == in[0].shape(), ValueError, "sum_to: shape ", shape_str(s), " does not broadcast to ",
                shape_str(in[0].shape()));
    return std::vector<TensorMeta>{{s, in[0].dtype()}};
  };
  d.cpu_kernel = sum_to_kernel;
  d.vjp = [](const VjpContext& c) { return TensorList{expand(c.grads[0], c.input_meta[0].shape)}; };
  return d;
}());

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return dispatch1(OpId::SumTo, {x}, {{"shape", shape}});
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

// ---- Add, Mul, Neg ------------------------------------------------------------------------
LUCID_REGISTER_OP(Add, "", [] {
  OpDef d = elementwise_op<OpId::Add>();
  d.vjp = [](const VjpContext& c) { return TensorList{c.grads[0], c.grads[0]}; };
  return d;
}());

LUCID_REGISTER_OP(Mul, "", [] {
  OpDef d = elementwise_op<OpId::Mul>();
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

Tensor add(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Add, {a, b}); }
Tensor mul(const Tensor& a, const Tensor& b) { return dispatch1(OpId::Mul, {a, b}); }
Tensor neg(const Tensor& x) { return dispatch1(OpId::Neg, {x}); }
Tensor mul_scalar(const Tensor& a, double s) { return mul(a, scalar_tensor(s)); }

// ---- Fill ---------------------------------------------------------------------------------
// PyTorch's checked scalar conversion (c10::overflows). Into an integer type, an integral value
// must lie in the type's range, unsigned types also taking negatives down to -max (they wrap);
// a fractional value must lie in [lowest, max], and inf and NaN fail. Into a float type, finite
// values must not exceed its largest finite value (inf and NaN pass). Anything converts to bool.
static bool fill_overflows(double v, DType t) {
  double lo = 0, hi = 0;
  switch (t) {
    case DType::Bool: case DType::Float64: return false;
    case DType::Float16: return std::isfinite(v) && std::abs(v) > 65504.0;
    case DType::BFloat16: return std::isfinite(v) && std::abs(v) > 3.3895313892515355e38;
    case DType::Float32: return std::isfinite(v) && std::abs(v) > 3.4028234663852886e38;
    case DType::UInt8: lo = 0, hi = 255; break;
    case DType::Int8: lo = -128, hi = 127; break;
    case DType::Int32: lo = -2147483648.0, hi = 2147483647.0; break;
    case DType::Int64: lo = -9223372036854775808.0, hi = 9223372036854775807.0; break;
  }
  if (!std::isfinite(v)) return true;
  if (t == DType::UInt8 && v == std::floor(v) && v < 0) return v < -hi;
  return v < lo || v > hi;
}

// Fill writes a scalar into its output. Out of place it takes the shape and dtype attributes;
// fill_ / zero_ are its in-place form (inputs empty, destination given).
LUCID_REGISTER_OP(Fill, "value:float, shape:ints?, dtype:dtype?", [] {
  OpDef d;
  d.num_inputs = 0;
  d.differentiable = false;
  d.infer = [](const TensorList&, const Attrs& a) {
    const DType dt = a.has("dtype") ? a.dtype("dtype") : DType::Float32;
    const double v = a.f("value");
    LUCID_CHECK(!fill_overflows(v, dt), Error, "fill: value ", v, " cannot be converted to type ", dtype_name(dt),
                " without overflow");
    return std::vector<TensorMeta>{{a.has("shape") ? a.ints("shape") : Shape{}, dt}};
  };
  d.cpu_kernel = [](const TensorList&, const TensorList& out, const Attrs& a) {
    const Tensor& o = out[0];
    double v = a.f("value");
    LUCID_DISPATCH_ALL(o.dtype(), "fill", [&] {
      scalar_t sv = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(v));
      cpu::StridedIter it({&o});
      it.for_each([sv](char** p, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<scalar_t*>(p[0] + i * s[0]) = sv;
      });
    });
  };
  return d;
}());

const Tensor& fill_(const Tensor& x, double value) {
  return dispatch_inplace(OpId::Fill, x, {}, {{"value", value}, {"shape", x.shape()}, {"dtype", x.dtype()}});
}

Tensor full(const Shape& shape, double value, DType dtype) {
  return dispatch1(OpId::Fill, {}, {{"value", value}, {"shape", shape}, {"dtype", dtype}});
}
Tensor zeros_like(const Tensor& x) { return full(x.shape(), 0.0, x.dtype()); }
Tensor ones_like(const Tensor& x) { return full(x.shape(), 1.0, x.dtype()); }

}  // namespace lucid
