// Deterministic creation ops: Empty, Arange, Linspace, Eye. Non-differentiable ops whose
// attributes carry the shape/dtype (zeros/ones/full use the core Fill op). Values are computed
// in double and cast, as PyTorch's CPU kernels do with their accumulate type.
#include <cmath>
#include <cstring>

#include "lucid/core/parallel.h"
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
  d.cpu_kernel = [](const TensorList&, const TensorList&, const Attrs&) {};
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

template <class T, class F>
static void fill_index(const Tensor& o, const F& f) {
  T* p = o.data<T>();
  parallel_for(0, o.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] = f(i);
  });
}

LUCID_REGISTER_OP(Arange, "start:float, end:float, step:float, dtype:dtype", [] {
  OpDef d = creation_op();
  d.infer = [](const TensorList&, const Attrs& a) {
    int64_t n = arange_size(a.f("start"), a.f("end"), a.f("step"));
    LUCID_CHECK(a.dtype("dtype") != DType::Bool, TypeError, "arange: dtype bool is not supported");
    return std::vector<TensorMeta>{{{n}, a.dtype("dtype")}};
  };
  d.cpu_kernel = [](const TensorList&, const TensorList& out, const Attrs& a) {
    double start = a.f("start"), step = a.f("step");
    LUCID_DISPATCH_NUMERIC(out[0].dtype(), "arange", [&] {
      using C = compute_t<scalar_t>;
      if constexpr (std::is_integral_v<scalar_t>) {
        int64_t s0 = static_cast<int64_t>(start), st = static_cast<int64_t>(step);
        bool exact = static_cast<double>(s0) == start && static_cast<double>(st) == step;
        fill_index<scalar_t>(out[0], [&](int64_t i) {
          return static_cast<scalar_t>(exact ? s0 + st * i : static_cast<int64_t>(start + step * static_cast<double>(i)));
        });
      } else {
        fill_index<scalar_t>(out[0], [&](int64_t i) { return static_cast<scalar_t>(static_cast<C>(start + step * static_cast<double>(i))); });
      }
    });
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
  d.cpu_kernel = [](const TensorList&, const TensorList& out, const Attrs& a) {
    int64_t n = a.i("steps");
    LUCID_DISPATCH_NUMERIC(out[0].dtype(), "linspace", [&] {
      using C = compute_t<scalar_t>;
      // PyTorch: start and end in the output type, step in double for integers; the first half
      // counts up from start, the second half down from end (symmetric rounding).
      double start = a.f("start"), end = a.f("end");
      if constexpr (std::is_integral_v<scalar_t>) { start = static_cast<double>(static_cast<scalar_t>(start)); end = static_cast<double>(static_cast<scalar_t>(end)); }
      double step = n > 1 ? (end - start) / static_cast<double>(n - 1) : 0.0;
      int64_t half = n / 2;
      fill_index<scalar_t>(out[0], [&](int64_t i) {
        double v = i < half ? start + step * static_cast<double>(i) : end - step * static_cast<double>(n - 1 - i);
        return static_cast<scalar_t>(static_cast<C>(v));
      });
    });
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
  d.cpu_kernel = [](const TensorList&, const TensorList& out, const Attrs&) {
    const Tensor& o = out[0];
    std::memset(o.data_ptr(), 0, o.numel() * itemsize(o.dtype()));
    int64_t n = o.shape()[0], m = o.shape()[1];
    LUCID_DISPATCH_ALL(o.dtype(), "eye", [&] {
      scalar_t* p = o.data<scalar_t>();
      for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(1));
    });
  };
  return d;
}());

Tensor eye(int64_t n, int64_t m, DType dtype) { return dispatch1(OpId::Eye, {}, {{"n", n}, {"m", m}, {"dtype", dtype}}); }

}  // namespace lucid
