// CPU kernels of the deterministic creation ops (records in ops/creation_ops.cpp): Empty (nothing
// to write: dispatch allocates the output), Arange, Linspace, Eye. Values are computed in double
// and cast, as PyTorch's CPU kernels do with their accumulate type.
#include <algorithm>
#include <cstring>

#include "lucid/core/parallel.h"
#include "lucid/ops/op_def.h"

namespace lucid::cpu {

namespace {

void empty_kernel(const TensorList&, const TensorList&, const Attrs&) {}

template <class T, class F>
void fill_index(const Tensor& o, const F& f) {
  T* p = o.data<T>();
  parallel_for(0, o.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] = f(i);
  });
}

void arange_kernel(const TensorList&, const TensorList& out, const Attrs& a) {
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
}

void linspace_kernel(const TensorList&, const TensorList& out, const Attrs& a) {
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
}

void eye_kernel(const TensorList&, const TensorList& out, const Attrs&) {
  const Tensor& o = out[0];
  std::memset(o.data_ptr(), 0, o.numel() * itemsize(o.dtype()));
  int64_t n = o.shape()[0], m = o.shape()[1];
  LUCID_DISPATCH_ALL(o.dtype(), "eye", [&] {
    scalar_t* p = o.data<scalar_t>();
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = static_cast<scalar_t>(static_cast<compute_t<scalar_t>>(1));
  });
}

}  // namespace

LUCID_REGISTER_KERNEL(Empty, CPU, empty_kernel);
LUCID_REGISTER_KERNEL(Arange, CPU, arange_kernel);
LUCID_REGISTER_KERNEL(Linspace, CPU, linspace_kernel);
LUCID_REGISTER_KERNEL(Eye, CPU, eye_kernel);

}  // namespace lucid::cpu
