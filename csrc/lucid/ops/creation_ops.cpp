// Deterministic creation ops: Empty, Arange, Linspace, Eye: their records and C++ API.
// Non-differentiable ops whose attributes carry the shape/dtype (zeros/ones/full use the core
// Fill op). Kernels: backends/<device>/kernels/creation.*.
#include <cmath>

#include "lucid/ops/creation.h"

namespace lucid {

static OpDef creation_op() {
  OpDef d;
  d.num_inputs = 0;
  d.differentiable = false;
  return d;
}

LUCID_REGISTER_OP(Empty, "shape:ints, dtype:dtype", [] {
  OpDef d = creation_op();
  d.infer = [](const TensorList&, const Attrs& a) { return std::vector<TensorMeta>{{a.ints("shape"), a.dtype("dtype")}}; };
  return d;
}());

Tensor empty(const Shape& shape, DType dtype) { return dispatch1(OpId::Empty, {}, {{"shape", shape}, {"dtype", dtype}}); }

// ---- Arange ----------------------------------------------------------------------------------
static int64_t arange_size(double start, double end, double step) {
  LUCID_CHECK(std::isfinite(start) && std::isfinite(end), ValueError, "arange: unsupported range: ", start, " -> ", end);
  LUCID_CHECK(step != 0, ValueError, "arange: argument 'step' must be nonzero");
  LUCID_CHECK((step > 0 && end >= start) || (step < 0 && end <= start), ValueError,
              "arange: upper bound and larger bound inconsistent with step sign (start=", start, ", end=", end,
              ", step=", step, ")");
  const double n = std::ceil((end - start) / step);
  // 2^63 is exactly representable; a count at or above it does not fit int64 (PyTorch raises too).
  LUCID_CHECK(n < 9223372036854775808.0, Error, "arange: invalid size ", n, " for start=", start, ", end=", end,
              ", step=", step, " (the element count overflows int64)");
  return static_cast<int64_t>(n);
}

LUCID_REGISTER_OP(Arange, "start:float, end:float, step:float, dtype:dtype", [] {
  OpDef d = creation_op();
  d.infer = [](const TensorList&, const Attrs& a) {
    int64_t n = arange_size(a.f("start"), a.f("end"), a.f("step"));
    LUCID_CHECK(a.dtype("dtype") != DType::Bool, TypeError, "arange: dtype bool is not supported");
    return std::vector<TensorMeta>{{{n}, a.dtype("dtype")}};
  };
  return d;
}());

Tensor arange(double start, double end, double step, DType dtype) {
  return dispatch1(OpId::Arange, {}, {{"start", start}, {"end", end}, {"step", step}, {"dtype", dtype}});
}

// ---- Linspace --------------------------------------------------------------------------------
LUCID_REGISTER_OP(Linspace, "start:float, end:float, steps:int, dtype:dtype", [] {
  OpDef d = creation_op();
  d.infer = [](const TensorList&, const Attrs& a) {
    int64_t n = a.i("steps");
    LUCID_CHECK(n >= 0, ValueError, "linspace: argument 'steps' must be non-negative, got ", n);
    LUCID_CHECK(a.dtype("dtype") != DType::Bool, TypeError, "linspace: dtype bool is not supported");
    return std::vector<TensorMeta>{{{n}, a.dtype("dtype")}};
  };
  return d;
}());

Tensor linspace(double start, double end, int64_t steps, DType dtype) {
  return dispatch1(OpId::Linspace, {}, {{"start", start}, {"end", end}, {"steps", steps}, {"dtype", dtype}});
}

// ---- Eye -------------------------------------------------------------------------------------
LUCID_REGISTER_OP(Eye, "n:int, m:int, dtype:dtype", [] {
  OpDef d = creation_op();
  d.infer = [](const TensorList&, const Attrs& a) {
    int64_t n = a.i("n"), m = a.i("m");
    LUCID_CHECK(n >= 0 && m >= 0, ValueError, "eye: n and m must be non-negative, got n=", n, ", m=", m);
    return std::vector<TensorMeta>{{{n, m}, a.dtype("dtype")}};
  };
  return d;
}());

Tensor eye(int64_t n, int64_t m, DType dtype) { return dispatch1(OpId::Eye, {}, {{"n", n}, {"m", m}, {"dtype", dtype}}); }

}  // namespace lucid
